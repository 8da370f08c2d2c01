/* mpbench.c - raw batched move_pages(2) rate, the baseline tierkitd's migration rate is compared
 * with: MIB of 4 KiB pages first placed on FROM, moved to TO in batches of BATCH pages by a
 * process moving another process's pages (as tierkitd does) - here a forked child's.
 * Build: gcc -O2 -static -o mpbench mpbench.c
 * Usage: mpbench MIB BATCH FROM TO [active|idle [wait]]  ->  MPBENCH pages=.. seconds=.. pages_per_s=.. failed=..
 * With "active" the target keeps writing its pages at nice 19 while they move, as the workload
 * does in the tierkitd run it is compared with (moving pages a process is using costs the kernel
 * more: TLB shootdowns, busy pages).
 * With "wait" it prints MPBENCH_READY child=PID once the target's pages are in place and waits for
 * SIGUSR1 before moving them: time for the test to attach a monitor (tierkitd --dry-run, DAMON)
 * to the target, so the baseline can be measured under the same monitoring as tierkitd's moves.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define PAGE 4096UL
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

int main(int argc, char **argv)
{
    if (argc < 5) { fprintf(stderr, "usage: %s MIB BATCH FROM TO\n", argv[0]); return 2; }
    size_t len = strtoul(argv[1], 0, 0) << 20, n = len / PAGE;
    long batch = atol(argv[2]);
    int from = atoi(argv[3]), to = atoi(argv[4]), active = argc > 5 && !strcmp(argv[5], "active");
    int wait_go = argc > 6 && !strcmp(argv[6], "wait");
    sigset_t usr1; sigemptyset(&usr1); sigaddset(&usr1, SIGUSR1);
    if (wait_go) sigprocmask(SIG_BLOCK, &usr1, NULL); /* the child unblocks it; we sigwait */
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); return 2; }
    madvise(p, len, MADV_NOHUGEPAGE);
    unsigned long mask = 1UL << from;
    if (syscall(SYS_mbind, p, len, 2, &mask, 64, 0)) { perror("mbind"); return 2; }
    int pfd[2]; if (pipe(pfd)) return 2;
    pid_t child = fork();
    if (child == 0) { /* the target: touch, then wait to be killed */
        sigprocmask(SIG_UNBLOCK, &usr1, NULL);
        for (size_t i = 0; i < len; i += PAGE) p[i] = 1;
        syscall(SYS_mbind, p, len, 0, NULL, 0, 0);
        if (write(pfd[1], "x", 1) != 1) _exit(2);
        if (!active) { pause(); _exit(0); }
        if (nice(19) == -1) _exit(2);
        for (;;) for (size_t i = 0; i < len; i += PAGE) p[i]++;
    }
    char c; if (read(pfd[0], &c, 1) != 1) return 2;
    void **pages = malloc(n * sizeof *pages);
    int *nodes = malloc(n * sizeof(int)), *st = malloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) { pages[i] = p + i * PAGE; nodes[i] = to; }
    if (wait_go) {
        printf("MPBENCH_READY child=%d\n", (int)child); fflush(stdout);
        int sig; sigwait(&usr1, &sig);
    }
    long failed = 0;
    double t0 = now();
    for (size_t i = 0; i < n; i += batch) {
        size_t k = n - i < (size_t)batch ? n - i : (size_t)batch;
        long r = syscall(SYS_move_pages, child, k, pages + i, nodes + i, st + i, 2 /* MPOL_MF_MOVE */);
        if (r < 0) { perror("move_pages"); failed += k; }
        else for (size_t j = 0; j < k; j++) failed += st[i + j] != to;
    }
    double dt = now() - t0;
    printf("MPBENCH pages=%zu batch=%ld target=%s seconds=%.4f pages_per_s=%.0f failed=%ld\n", n, batch, active ? "active" : "idle", dt, n / dt, failed);
    kill(child, SIGKILL); waitpid(child, NULL, 0);
    return failed ? 1 : 0;
}
