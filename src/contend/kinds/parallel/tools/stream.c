/* stream: McCalpin's four vector kernels (copy, scale, add, triad) over three arrays of doubles, each
 * kernel run NTIMES and its best time reported as MB/s (10^6 bytes), as STREAM does. The arrays should
 * be well above the last-level cache (STREAM's rule: each at least 4× it); contend sizes them so.
 * Single-threaded, like CoPTS's build. The results are checked, so a broken run cannot report.
 * usage: stream MIB_PER_ARRAY NTIMES */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: stream MIB_PER_ARRAY NTIMES\n"); return 2; }
    long n = (long)(atof(argv[1]) * 1048576 / sizeof(double));
    int ntimes = atoi(argv[2]);
    if (n < 1024 || ntimes < 2) { fprintf(stderr, "stream: MIB_PER_ARRAY must be >= 0.01, NTIMES >= 2\n"); return 2; }
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double)), *c = malloc(n * sizeof(double));
    if (!a || !b || !c) { fprintf(stderr, "stream: out of memory\n"); return 1; }
    for (long j = 0; j < n; j++) { a[j] = 1.0; b[j] = 2.0; c[j] = 0.0; }
    const double q = 3.0;
    const char *name[4] = {"Copy", "Scale", "Add", "Triad"};
    const double words[4] = {2, 2, 3, 3};
    double best[4] = {DBL_MAX, DBL_MAX, DBL_MAX, DBL_MAX};
    for (int k = 0; k < ntimes; k++) {
        double t[4];
        t[0] = now(); for (long j = 0; j < n; j++) c[j] = a[j];            t[0] = now() - t[0];
        t[1] = now(); for (long j = 0; j < n; j++) b[j] = q * c[j];        t[1] = now() - t[1];
        t[2] = now(); for (long j = 0; j < n; j++) c[j] = a[j] + b[j];     t[2] = now() - t[2];
        t[3] = now(); for (long j = 0; j < n; j++) a[j] = b[j] + q * c[j]; t[3] = now() - t[3];
        if (k > 0) /* the first pass warms up, as in STREAM */
            for (int i = 0; i < 4; i++) best[i] = fmin(best[i], t[i]);
    }
    /* expected values after ntimes passes, from STREAM's check */
    double ea = 1.0, eb = 2.0, ec = 0.0;
    for (int k = 0; k < ntimes; k++) { ec = ea; eb = q * ec; ec = ea + eb; ea = eb + q * ec; }
    if (fabs(a[n / 2] - ea) > 1e-8 * fabs(ea) || fabs(b[n - 1] - eb) > 1e-8 * fabs(eb) || fabs(c[0] - ec) > 1e-8 * fabs(ec)) {
        fprintf(stderr, "stream: results do not validate\n");
        return 1;
    }
    printf("stream array_mib=%.1f ntimes=%d\n", n * sizeof(double) / 1048576.0, ntimes);
    for (int i = 0; i < 4; i++)
        printf("%s: %.1f MB/s\n", name[i], words[i] * sizeof(double) * n / best[i] / 1e6);
    return 0;
}
