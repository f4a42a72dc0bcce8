/* A pod's sandbox process (a Kubernetes "pause" container): holds the pod's namespaces, reaps what is
 * orphaned into it, ends on SIGINT or SIGTERM. Built static by contend.cri.node: there is no image registry
 * here to pull one from. */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void bye(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }

int main(void) {
    struct sigaction a = {0};
    a.sa_handler = bye;
    sigaction(SIGINT, &a, NULL);
    sigaction(SIGTERM, &a, NULL);
    a.sa_handler = reap;
    a.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &a, NULL);
    for (;;) pause();
}
