/* shim_test.c - the program the shim tests run under LD_PRELOAD (dynamically linked).
 *   sites    allocate site A (3 MiB, malloc) and site B (5 MiB, calloc), touch them, report where
 *            their pages are (move_pages) and their memory policy (get_mempolicy):
 *            SHIM_SITES a_pages= a_node0= a_node1= a_mode= b_pages= b_node0= b_node1= b_mode=
 *   threads  4 threads x 5000 rounds of every interposed call, contents checked:
 *            SHIM_THREADS ok=1 marker_allocs=<n>
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096UL
#define MARKER 12345

static void count(char *p, size_t len, long *n0, long *n1)
{
    size_t n = len / PAGE; void *pages[4096]; int st[4096];
    char *b = (char *)(((uintptr_t)p + PAGE - 1) & ~(PAGE - 1));
    n = (p + len - b) / PAGE; if (n > 4096) n = 4096;
    for (size_t i = 0; i < n; i++) pages[i] = b + i * PAGE;
    *n0 = *n1 = 0;
    if (syscall(SYS_move_pages, 0, n, pages, NULL, st, 0) == 0)
        for (size_t i = 0; i < n; i++) { if (st[i] == 0) (*n0)++; else if (st[i] == 1) (*n1)++; }
}
static int mode_of(void *p) { int m = -1; unsigned long mask[16]; syscall(SYS_get_mempolicy, &m, mask, 1024, p, 2 /* MPOL_F_ADDR */); return m; }

__attribute__((noinline)) static char *site_a(void) { return malloc(3 << 20); }
__attribute__((noinline)) static char *site_b(void) { return calloc(5, 1 << 20); }

static void *worker(void *arg)
{
    long id = (long)arg, bad = 0;
    for (int i = 0; i < 5000; i++) {
        char *m = malloc(MARKER); memset(m, (int)id, MARKER);
        char *c = calloc(1, 5000); if (c[4999]) bad++;
        c = realloc(c, 9000); c[8999] = 1;
        void *pm = NULL; if (posix_memalign(&pm, 64, 4096) || ((uintptr_t)pm & 63)) bad++;
        void *al = aligned_alloc(128, 8192); if ((uintptr_t)al & 127) bad++;
        char *mm = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); mm[0] = 1;
        for (int k = 0; k < MARKER; k += 997) if (m[k] != (char)id) bad++;
        free(m); free(c); free(pm); free(al); munmap(mm, 8192);
    }
    return (void *)bad;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "sites")) {
        char *a = site_a(), *b = site_b();
        memset(a, 1, 3 << 20); memset(b, 2, 5 << 20);
        long a0, a1, b0, b1;
        count(a, 3 << 20, &a0, &a1); count(b, 5 << 20, &b0, &b1);
        printf("SHIM_SITES a_pages=%ld a_node0=%ld a_node1=%ld a_mode=%d b_pages=%ld b_node0=%ld b_node1=%ld b_mode=%d\n",
               a0 + a1, a0, a1, mode_of(a + PAGE), b0 + b1, b0, b1, mode_of(b + PAGE));
        free(a); free(b);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "threads")) {
        pthread_t t[4]; long bad = 0;
        for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)i);
        for (int i = 0; i < 4; i++) { void *r; pthread_join(t[i], &r); bad += (long)r; }
        if (fork() == 0) { char *volatile c = malloc(MARKER); c[0] = 1; free(c); exit(0); }  /* a child after threads: no deadlock; its own records */
        wait(NULL);
        printf("SHIM_THREADS ok=%d marker_allocs=%d\n", bad == 0, 4 * 5000);
        return bad != 0;
    }
    fprintf(stderr, "usage: shim_test sites|threads\n");
    return 2;
}
