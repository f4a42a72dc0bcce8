/* contend-load: one steady load whose level changes in place, for the whole of a trial.
 *
 *   contend-load [-i MS] cpu THREADS          level: CPUs busy (duty-cycled matrix products, at most THREADS)
 *   contend-load [-i MS] mem                  level: bytes of anonymous memory held (touched once)
 *   contend-load [-i MS] disk FILE SIZE BLOCK DEPTH   level: random direct writes per second
 *   contend-load [-i MS] net IP PORT          level: bytes per second sent over one TCP connection
 *   contend-load sink PORT                    a TCP sink for `net` (discards what it receives)
 *
 * Protocol (line-based, so every runtime's exec carries it): the host writes one level per line on stdin;
 * the agent applies it and answers `a <t> <level>` once it is in force (for memory: once the pages are
 * touched or released). Every interval it prints `r <t> <work> <extra>`: the work done in that interval
 * (cpu: matrix products; mem: anonymous resident bytes, a gauge; disk: writes completed and the sum of
 * their latencies in µs; net: bytes sent). <t> is the agent's own monotonic clock in seconds since it
 * started: the host maps it to its own clock, since a sandbox (gVisor) may keep a clock of its own.
 * End of stdin ends the agent, so nothing outlives the host side that started it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double t0;
static _Atomic double level;           /* in the mode's unit */
static atomic_ullong work, extra;      /* counters the reporter reads and resets */
static int nthreads = 1;
static double cpu_period = 0.010;  /* the cpu mode's duty-cycle period */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s) {
    if (s <= 0) return;
    struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

static void die(const char *what) {
    printf("e %s: %s\n", what, strerror(errno));
    fflush(stdout);
    exit(1);
}

/* ---------------------------------------------------------------- cpu: duty-cycled matrix products */
#define N 24
static volatile double sink_value;
static void matrix_products(double a[N][N], double b[N][N], double c[N][N], int count) {
    for (int rep = 0; rep < count; rep++) {
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int k = 0; k < N; k++) s += a[i][k] * b[k][j];
                c[i][j] = s;
            }
        double tr = 0;
        for (int i = 0; i < N; i++) tr += c[i][(i * 7) % N];
        sink_value = tr;  /* volatile: the whole product stays live */
        a[0][0] = 1 + tr * 1e-12;
        atomic_fetch_add(&work, 1);
    }
}

/* One worker. As few workers as the level needs are active, each busy level / workers of every period (10 ms;
 * stress-ng's --cpu-load scheme): one CPU's worth is one worker that never sleeps. The level is a demand for
 * CPU time: what a worker did not get in a period (pre-empted by a neighbour) it asks for in the next ones, up
 * to 100 ms of it. How much it got is read from the wall clock alone (vDSO, no system call): a gap of more
 * than GAP between two readings 4 products apart is time the thread did not run. No CPU clock: gVisor's
 * (a system call, trapped) under-reports, and a debt kept by it made a sandboxed load ask for far too much. */
#define GAP 0.0005
static void *cpu_worker(void *arg) {
    int index = (int)(intptr_t)arg;
    double a[N][N], b[N][N], c[N][N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) a[i][j] = b[i][j] = (i + j) % 7 + 1.0 / (1 + i);
    const double period = cpu_period, max_debt = 0.100;
    double start = now(), debt = 0;
    for (;;) {
        double want = atomic_load(&level);
        int active = want > 0 ? (int)ceil(want - 1e-9) : 0;
        if (active > nthreads) active = nthreads;
        double duty = index < active ? want / active : 0;
        if (duty > 1) duty = 1;
        if (duty <= 0) {  /* idle: no debt, and few wake-ups (each one costs a sandbox a system call) */
            debt = 0;
            sleep_s(0.02);
            start = now();
            continue;
        }
        double target = duty * period + debt, end = start + period, got = 0, last = now();
        if (target > period) target = period;
        while (got < target && last < end) {
            matrix_products(a, b, c, 4);
            double t = now();
            if (t - last < GAP) got += t - last;  /* ran; a longer gap was time taken from it */
            last = t;
        }
        debt += duty * period - got;
        if (debt < 0) debt = 0;
        if (debt > max_debt) debt = max_debt;
        start = end;
        double t = now();
        if (start < t - period) start = t;  /* behind by more than a period: do not catch up in wall time */
        sleep_s(start - t);
    }
    return NULL;
}

/* ---------------------------------------------------------------- mem: hold anonymous pages */
#define CHUNK (1UL << 20)  /* the level's grain: 1 MiB, 0.1 % of a 1 GiB pool */
static char **chunks;
static size_t nchunks, cap_chunks;
static size_t page;

static size_t anon_rss(void) {  /* resident less file-backed and shmem pages (shared with the host) */
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size, res, shared;
    if (!f) return nchunks * CHUNK;
    int n = fscanf(f, "%lu %lu %lu", &size, &res, &shared);
    fclose(f);
    return n == 3 ? (res - shared) * page : nchunks * CHUNK;
}

static void mem_apply(size_t target) {
    size_t want = target / CHUNK;
    while (nchunks > want) munmap(chunks[--nchunks], CHUNK);
    while (nchunks < want) {
        if (nchunks == cap_chunks) {
            cap_chunks = cap_chunks ? cap_chunks * 2 : 256;
            chunks = realloc(chunks, cap_chunks * sizeof *chunks);
            if (!chunks) die("realloc");
        }
        char *p = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) die("mmap");
        for (size_t o = 0; o < CHUNK; o += page) p[o] = 1;
        chunks[nchunks++] = p;
    }
}

/* ---------------------------------------------------------------- disk: paced random direct writes */
static int disk_fd;
static off_t disk_blocks;
static size_t disk_block;
static pthread_mutex_t pace = PTHREAD_MUTEX_INITIALIZER;
static double next_slot;

static void *disk_worker(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u ^ (unsigned)getpid();
    void *buf;
    if (posix_memalign(&buf, 4096, disk_block)) die("posix_memalign");
    memset(buf, 0xab, disk_block);
    for (;;) {
        double rate = atomic_load(&level);
        if (rate <= 0) { sleep_s(0.005); continue; }
        pthread_mutex_lock(&pace);  /* one schedule for all workers: slot k at next_slot + k / rate */
        double t = now(), slot = next_slot > t ? next_slot : t;
        if (slot < t - 0.05) slot = t;  /* do not bank more than 50 ms of missed writes */
        next_slot = slot + 1.0 / rate;
        pthread_mutex_unlock(&pace);
        sleep_s(slot - now());
        off_t off = (off_t)(rand_r(&seed) % disk_blocks) * (off_t)disk_block;
        double s = now();
        if (pwrite(disk_fd, buf, disk_block, off) != (ssize_t)disk_block) die("pwrite");
        atomic_fetch_add(&extra, (unsigned long long)((now() - s) * 1e6));
        atomic_fetch_add(&work, 1);
    }
    return NULL;
}

/* ---------------------------------------------------------------- net: paced TCP sender, and its sink */
static int net_fd;

static void *net_worker(void *arg) {
    (void)arg;
    static char buf[64 << 10];
    double t = now(), allowance = 0;
    for (;;) {
        double rate = atomic_load(&level), t1 = now();
        allowance += rate * (t1 - t);
        t = t1;
        if (allowance > rate * 0.01 + sizeof buf) allowance = rate * 0.01 + sizeof buf;  /* 10 ms of burst */
        if (rate <= 0 || allowance < 1024) { allowance = rate <= 0 ? 0 : allowance; sleep_s(0.001); continue; }
        size_t n = allowance < sizeof buf ? (size_t)allowance : sizeof buf;
        ssize_t w = send(net_fd, buf, n, MSG_NOSIGNAL);
        if (w < 0) { if (errno == EINTR) continue; die("send"); }
        allowance -= (double)w;
        atomic_fetch_add(&work, (unsigned long long)w);
    }
    return NULL;
}

static void *sink_conn(void *arg) {
    int fd = (int)(intptr_t)arg;
    static __thread char buf[256 << 10];
    while (read(fd, buf, sizeof buf) > 0) {}
    close(fd);
    return NULL;
}

static _Noreturn void sink(int port) {
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (s < 0) die("socket");
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 16)) die("bind");
    printf("a 0 listening\n");
    fflush(stdout);
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0) { if (errno == EINTR) continue; die("accept"); }
        pthread_t th;
        pthread_create(&th, NULL, sink_conn, (void *)(intptr_t)c);
        pthread_detach(th);
    }
}

/* ---------------------------------------------------------------- the control loop */
static size_t size_arg(const char *s) {
    char *end;
    double v = strtod(s, &end);
    switch (*end) { case 'k': case 'K': v *= 1024; break; case 'm': case 'M': v *= 1 << 20; break;
                    case 'g': case 'G': v *= 1 << 30; break; }
    return (size_t)v;
}

int main(int argc, char **argv) {
    double interval = 0.1;
    int a = 1;
    if (a + 1 < argc && !strcmp(argv[a], "-i")) { interval = atof(argv[a + 1]) / 1000; a += 2; }
    if (a >= argc) { fprintf(stderr, "usage: contend-load [-i MS] cpu|mem|disk|net|sink ARGS\n"); return 2; }
    setvbuf(stdout, NULL, _IOLBF, 0);
    t0 = now();
    page = (size_t)sysconf(_SC_PAGESIZE);
    const char *mode = argv[a];
    void *(*worker)(void *) = NULL;
    if (!strcmp(mode, "sink") && a + 1 < argc) sink(atoi(argv[a + 1]));
    if (!strcmp(mode, "cpu") && a + 1 < argc) {
        nthreads = atoi(argv[a + 1]);
        if (a + 2 < argc) cpu_period = atof(argv[a + 2]) / 1000;
        worker = cpu_worker;
    } else if (!strcmp(mode, "mem")) {
        nthreads = 0;
    } else if (!strcmp(mode, "disk") && a + 4 < argc) {
        disk_fd = open(argv[a + 1], O_WRONLY | O_DIRECT);
        if (disk_fd < 0) die(argv[a + 1]);
        disk_block = size_arg(argv[a + 3]);
        disk_blocks = (off_t)(size_arg(argv[a + 2]) / disk_block);
        nthreads = atoi(argv[a + 4]);
        if (disk_block == 0 || disk_blocks == 0) { errno = EINVAL; die("size/block"); }
        worker = disk_worker;
    } else if (!strcmp(mode, "net") && a + 2 < argc) {
        net_fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[a + 2]))};
        if (net_fd < 0 || inet_pton(AF_INET, argv[a + 1], &sa.sin_addr) != 1) die("address");
        if (connect(net_fd, (struct sockaddr *)&sa, sizeof sa)) die("connect");
        nthreads = 1;
        worker = net_worker;
    } else {
        fprintf(stderr, "contend-load: unknown mode or missing arguments: %s\n", mode);
        return 2;
    }
    for (int i = 0; i < nthreads; i++) {
        pthread_t th;
        if (pthread_create(&th, NULL, worker, (void *)(intptr_t)i)) die("pthread_create");
    }
    char line[128];
    size_t used = 0;
    double next = t0 + interval;
    for (;;) {
        double t = now();
        struct pollfd p = {.fd = 0, .events = POLLIN};
        int r = poll(&p, 1, next > t ? (int)((next - t) * 1000) + 1 : 0);
        if (r > 0) {
            ssize_t n = read(0, line + used, sizeof line - 1 - used);
            if (n <= 0) return 0;  /* the host closed stdin: the trial is over */
            used += (size_t)n;
            line[used] = 0;
            char *nl;
            while ((nl = strchr(line, '\n'))) {
                *nl = 0;
                double v = atof(line);
                if (!strcmp(mode, "mem")) mem_apply((size_t)(v > 0 ? v : 0));
                atomic_store(&level, v);
                printf("a %.6f %.17g\n", now() - t0, v);
                used -= (size_t)(nl + 1 - line);
                memmove(line, nl + 1, used + 1);
            }
            if (used >= sizeof line - 1) used = 0;  /* a line too long to be a level: dropped */
        }
        t = now();
        if (t >= next) {
            unsigned long long w = !strcmp(mode, "mem") ? anon_rss() : atomic_exchange(&work, 0);
            unsigned long long x = atomic_exchange(&extra, 0);
            printf("r %.6f %llu %llu\n", t - t0, w, x);
            next += interval;
            if (next < t) next = t + interval;
        }
    }
}
