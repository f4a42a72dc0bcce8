/* linpack: LU factorisation with partial pivoting solving A·x = b (LINPACK's dgefa/dgesl), repeated until
 * a minimum time has passed; prints MFLOPS as 2/3·n³ + 2·n² operations per solve (Dongarra's count) and
 * the scaled residual, so a wrong answer cannot pass for a fast one.
 * usage: linpack N MIN_SECONDS */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fill(int n, double *a, double *b, unsigned seed) {
    for (int i = 0; i < n * n; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i] = ((seed >> 8) & 0xffff) / 65536.0 - 0.5;
    }
    for (int i = 0; i < n; i++) { /* b = A·1, so x = 1 */
        double s = 0;
        for (int j = 0; j < n; j++) s += a[i * n + j];
        b[i] = s;
    }
}

/* A (row-major, n×n) becomes L\U in place; piv[k] the row swapped into k. Returns 1 if singular. */
static int dgefa(int n, double *a, int *piv) {
    for (int k = 0; k < n; k++) {
        int p = k;
        for (int i = k + 1; i < n; i++)
            if (fabs(a[i * n + k]) > fabs(a[p * n + k])) p = i;
        piv[k] = p;
        if (a[p * n + k] == 0.0) return 1;
        if (p != k)
            for (int j = 0; j < n; j++) { double t = a[k * n + j]; a[k * n + j] = a[p * n + j]; a[p * n + j] = t; }
        double inv = 1.0 / a[k * n + k];
        for (int i = k + 1; i < n; i++) {
            double m = a[i * n + k] * inv;
            a[i * n + k] = m;
            double *ri = a + i * n, *rk = a + k * n;
            for (int j = k + 1; j < n; j++) ri[j] -= m * rk[j];
        }
    }
    return 0;
}

/* dgefa swapped whole rows (L's columns too, as LAPACK's dgetrf), so every swap applies to b first */
static void dgesl(int n, const double *a, const int *piv, double *b) {
    for (int k = 0; k < n; k++) {
        double t = b[piv[k]]; b[piv[k]] = b[k]; b[k] = t;
    }
    for (int k = 0; k < n; k++)
        for (int i = k + 1; i < n; i++) b[i] -= a[i * n + k] * b[k];
    for (int k = n - 1; k >= 0; k--) {
        for (int j = k + 1; j < n; j++) b[k] -= a[k * n + j] * b[j];
        b[k] /= a[k * n + k];
    }
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: linpack N MIN_SECONDS\n"); return 2; }
    int n = atoi(argv[1]);
    double min_s = atof(argv[2]);
    if (n < 2 || min_s < 0) { fprintf(stderr, "linpack: N must be >= 2, MIN_SECONDS >= 0\n"); return 2; }
    double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n);
    int *piv = malloc(sizeof(int) * n);
    if (!a || !b || !piv) { fprintf(stderr, "linpack: out of memory\n"); return 1; }
    long loops = 0;
    double solve_s = 0, t0 = now();
    do {
        fill(n, a, b, 1325u); /* set-up is not timed, as in LINPACK */
        double s = now();
        if (dgefa(n, a, piv)) { fprintf(stderr, "linpack: singular matrix\n"); return 1; }
        dgesl(n, a, piv, b);
        solve_s += now() - s;
        loops++;
    } while (now() - t0 < min_s);
    double err = 0;
    for (int i = 0; i < n; i++) err = fmax(err, fabs(b[i] - 1.0));
    double ops = 2.0 / 3.0 * n * (double)n * n + 2.0 * n * (double)n;
    printf("linpack n=%d loops=%ld seconds=%.6f max_error=%.3e\n", n, loops, solve_s, err);
    printf("MFLOPS: %.3f\n", ops * loops / solve_s / 1e6);
    return err < 1e-6 ? 0 : 1;
}
