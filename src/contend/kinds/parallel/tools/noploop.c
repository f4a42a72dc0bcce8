/* noploop (Brendan Gregg's CPU clock benchmark, as CoPTS runs it): a fixed count of one-cycle instructions,
 * timed; the count over the time estimates the clock the container's CPU gives it, which falls when
 * containers share cores.
 * Plain NOPs are not one cycle each on a current core: a wide front end retires several per cycle (this
 * program's `nop` mode shows it, about 30 per ns on an EPYC). The default `chain` mode therefore runs a
 * chain of dependent adds, one cycle of latency each, so the count over the time is the clock in GHz. The adds
 * add a register, not an immediate: a Golden Cove core (this VM's Xeon) folds a chain of `add $1` in its renamer
 * and retired it at 8.6 per ns, where `add %reg` gives 2.87 (2026-12-01, tests/test_parallel.py).
 * usage: noploop COUNT [chain|nop]   (COUNT rounded up to a multiple of 100) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOP10 "nop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\t"
#define ADD10 "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t" \
              "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) { fprintf(stderr, "usage: noploop COUNT [chain|nop]\n"); return 2; }
    double count = atof(argv[1]);
    int nop = argc == 3 && strcmp(argv[2], "nop") == 0;
    if (count < 100 || (argc == 3 && !nop && strcmp(argv[2], "chain") != 0)) {
        fprintf(stderr, "noploop: COUNT must be >= 100, mode chain or nop\n");
        return 2;
    }
    long loops = (long)((count + 99) / 100), acc = 0, one = 1;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (nop)
        for (long i = 0; i < loops; i++)
            __asm__ volatile(NOP10 NOP10 NOP10 NOP10 NOP10 NOP10 NOP10 NOP10 NOP10 NOP10);
    else
        for (long i = 0; i < loops; i++)
            __asm__ volatile(ADD10 ADD10 ADD10 ADD10 ADD10 ADD10 ADD10 ADD10 ADD10 ADD10 : "+r"(acc) : "r"(one));
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
    if (!nop && acc != loops * 100) { fprintf(stderr, "noploop: chain miscounted\n"); return 1; }
    printf("noploop mode=%s count=%ld seconds=%.6f\n", nop ? "nop" : "chain", loops * 100, s);
    printf("GHz: %.4f\n", loops * 100 / s / 1e9);
    return 0;
}
