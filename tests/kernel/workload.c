/* workload.c - the real-kernel tests' target: a hot region swept continuously and a cold region
 * touched once, each first placed on a chosen node (mbind MPOL_BIND, then MPOL_DEFAULT so the
 * pages stay movable), reporting where its pages are with move_pages(2) queries on itself.
 *
 * Build: gcc -O2 -static -o workload workload.c
 * Usage: workload HOT_MIB COLD_MIB SECONDS [HOT_NODE [COLD_NODE]]   (default nodes 1 1)
 * Prints: WORKLOAD_START pid=.. hot_pages=.. cold_pages=.. (.. hot_addr=.. cold_addr=.., the regions' addresses)
 *         WORKLOAD_RESULT pid=.. hot_node0=.. hot_node1=.. cold_node0=.. cold_node1=.. other=..
 *                         sweeps=.. corrupt=..
 * SECONDS 0 runs until SIGTERM/SIGINT; SIGUSR1 prints a report and keeps running:
 *         WORKLOAD_REPORT pid=.. hot_node0=.. ... sweeps=.. data_node=.. heap_node=.. stack_node=.. mono=..
 *         (the nodes of a page of its own data, heap and stack; CLOCK_MONOTONIC seconds, also on
 *         WORKLOAD_START; WORKLOAD_REPORT_HOT=1 counts only the hot region's pages, cold ones as 0)
 * WORKLOAD_PHASED=1 sweeps the hot region in phases (migration toggling's test): at first only its
 *         first half, after a SIGUSR2 only its second half (the first half's pages go cold: a
 *         tiering system that promoted them demotes them again), after another the whole region
 *         (the count of accessed pages doubles); each change prints WORKLOAD_PHASE n=.. mono=..
 * WORKLOAD_NICE=N in the environment lowers its priority (busybox has no `nice` applet).
 * WORKLOAD_THP=1 puts both regions on transparent huge pages (2 MiB aligned, MADV_HUGEPAGE; the
 *         sizes must be multiples of 2 MiB); WORKLOAD_START then says thp=1 and how much of the
 *         process's memory the kernel gave huge pages (anon_huge_kb, from smaps_rollup). The
 *         reports still count 4 KiB pages (move_pages on each), 512 to a huge page.
 * WORKLOAD_FORK=1 forks a child after placing the pages: it sleeps holding copy-on-write shares
 * of every page until the workload ends (pages mapped by two processes cannot be moved by
 * move_pages without MPOL_MF_MOVE_ALL: -EACCES), then exits with it.
 * WORKLOAD_READONLY=1 makes the sweep read only (a write would break the sharing: copy-on-write).
 * WORKLOAD_TLB_TICK_US=N forks, before any region is mapped, a child that wakes every N us: each
 * wake switches address spaces (a CR3 write, which flushes the TLB on a CPU without PCID), as the
 * TLB misses of a real CPU would. Under QEMU's TCG the emulated TLB grows to hold the whole hot
 * region and x86 Linux clears accessed bits without a TLB flush (ptep_clear_flush_young), so
 * without such switches the hot pages' accessed bits are never set again and DAMON reads them idle.
 * WORKLOAD_CPU=N pins the workload and its ticker to CPU N (a guest with several vCPUs: kswapd then
 *         runs beside it, not in its place).
 * WORKLOAD_COLD_TOUCH_PER_S=R keeps touching the cold region after its first touch: R cold pages a
 * second (paced by CLOCK_MONOTONIC between sweeps), each a pseudo-random page of the region
 * (xorshift, the same sequence every run), one read-modify-write of its pattern word. Each cold
 * page is then touched about every COLD_PAGES / R seconds, at random times (as a simulated uniform
 * access pattern): its NUMA hint faults come that long after a scan marks it, on average.
 * WORKLOAD_NODE0_FREE_MIB=F fills node 0 after both regions are placed so that F MiB stay free:
 * it maps MemFree(node 0) - F MiB, binds it to node 0 (MPOL_BIND) and mlocks it (unevictable, so
 * kswapd demotes only the workload's own pages), then prints
 *         WORKLOAD_FILL fill_mib=.. node0_free_kb_before=.. node0_free_kb=.. (node 0's MemFree
 * after the fill, from /sys/devices/system/node/node0/meminfo) before WORKLOAD_START.
 * Exit 0 when the data survived every migration intact, 1 otherwise, 2 on setup errors.
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

#define MPOL_DEFAULT 0
#define MPOL_BIND 2
#define PAGE 4096UL

static volatile sig_atomic_t stop, report, next_phase;
static void on_stop(int s) { (void)s; stop = 1; }
static void on_usr1(int s) { (void)s; report = 1; }
static void on_usr2(int s) { (void)s; next_phase++; }

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

#define HUGE (2UL << 20)

/* WORKLOAD_THP=1: the regions on transparent huge pages (2 MiB aligned, MADV_HUGEPAGE) */
static int thp;

static char *region(size_t len, int node)
{
    size_t span = thp ? len + HUGE : len;
    char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); exit(2); }
    if (thp) {
        /* keep the 2 MiB aligned part: a huge page needs an aligned PMD's worth of the VMA */
        char *a = (char *)(((uintptr_t)p + HUGE - 1) & ~(HUGE - 1));
        if (a > p) munmap(p, a - p);
        if (a + len < p + span) munmap(a + len, p + span - (a + len));
        p = a;
        if (madvise(p, len, MADV_HUGEPAGE) != 0) { perror("madvise hugepage"); exit(2); }
    } else {
        madvise(p, len, MADV_NOHUGEPAGE); /* 4 KiB pages: what tierkitd manages */
    }
    unsigned long mask = 1UL << node;
    if (syscall(SYS_mbind, p, len, MPOL_BIND, &mask, 64, 0) != 0) { perror("mbind"); exit(2); }
    for (size_t i = 0; i < len; i += PAGE) *(uint64_t *)(p + i) = 0x5a5a000000000000ull ^ (uintptr_t)(p + i);
    if (syscall(SYS_mbind, p, len, MPOL_DEFAULT, NULL, 0, 0) != 0) { perror("mbind default"); exit(2); }
    return p;
}

/* the nodes of one page each of the process's own small VMAs: its data (the signal flags, read
 * every sweep), its heap (count()'s arrays, written every report) and its stack (written every
 * call), as the last count() found them: -1 before the first */
static int small_node[3] = { -1, -1, -1 };

static void count(char *p, size_t len, long *n0, long *n1, long *other)
{
    size_t n = len / PAGE;
    void **pages = malloc(n * sizeof *pages);
    int *st = malloc(n * sizeof(int));
    void *small[3] = { (void *)&stop, (void *)pages, (void *)&n };
    if (syscall(SYS_move_pages, 0, 3, small, NULL, small_node, 0) != 0) small_node[0] = small_node[1] = small_node[2] = -1;
    for (size_t i = 0; i < n; i++) pages[i] = p + i * PAGE;
    *n0 = *n1 = 0;
    if (syscall(SYS_move_pages, 0, n, pages, NULL, st, 0) != 0) { perror("move_pages"); *other += n; }
    else for (size_t i = 0; i < n; i++) { if (st[i] == 0) (*n0)++; else if (st[i] == 1) (*n1)++; else (*other)++; }
    free(pages); free(st);
}

/* the KiB of the first line of `path` that holds `key` ("MemFree:", "AnonHugePages:"), -1 without */
static long meminfo_kb(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    char line[256], *at;
    long kb = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if ((at = strstr(line, key))) { sscanf(at + strlen(key), "%ld", &kb); break; }
    fclose(f);
    return kb;
}

static long node0_free_kb(void) { return meminfo_kb("/sys/devices/system/node/node0/meminfo", "MemFree:"); }

/* the process's anonymous memory on transparent huge pages (AnonHugePages of smaps_rollup), KiB */
static long anon_huge_kb(void) { return meminfo_kb("/proc/self/smaps_rollup", "AnonHugePages:"); }

/* WORKLOAD_NODE0_FREE_MIB: fill node 0 with mlocked pages until that much stays free */
static void fill_node0(long free_mib)
{
    long before = node0_free_kb();
    if (before < 0) { fprintf(stderr, "fill: no node0 meminfo\n"); exit(2); }
    long fill_kb = before - free_mib * 1024;
    if (fill_kb > 0) {
        size_t len = (size_t)fill_kb << 10;
        char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) { perror("fill mmap"); exit(2); }
        madvise(p, len, MADV_NOHUGEPAGE);
        unsigned long mask = 1UL;
        if (syscall(SYS_mbind, p, len, MPOL_BIND, &mask, 64, 0) != 0) { perror("fill mbind"); exit(2); }
        if (mlock(p, len) != 0) { perror("fill mlock"); exit(2); }
    }
    printf("WORKLOAD_FILL fill_mib=%.1f node0_free_kb_before=%ld node0_free_kb=%ld\n", fill_kb / 1024.0, before, node0_free_kb());
    fflush(stdout);
}

static long corrupt(char *p, size_t len)
{
    long bad = 0;
    for (size_t i = 0; i < len; i += PAGE)
        if ((*(uint64_t *)(p + i) & 0xffff000000000000ull) != 0x5a5a000000000000ull) bad++;
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 4) { fprintf(stderr, "usage: %s HOT_MIB COLD_MIB SECONDS [HOT_NODE [COLD_NODE]]\n", argv[0]); return 2; }
    size_t hot = strtoul(argv[1], 0, 0) << 20, cold = strtoul(argv[2], 0, 0) << 20;
    double secs = atof(argv[3]);
    int hn = argc > 4 ? atoi(argv[4]) : 1, cn = argc > 5 ? atoi(argv[5]) : 1;
    if (getenv("WORKLOAD_NICE") && nice(atoi(getenv("WORKLOAD_NICE"))) == -1) perror("nice");
    thp = getenv("WORKLOAD_THP") != NULL;
    if (thp && ((hot | cold) & (HUGE - 1))) { fprintf(stderr, "WORKLOAD_THP: sizes must be multiples of 2 MiB\n"); return 2; }
    signal(SIGTERM, on_stop); signal(SIGINT, on_stop); signal(SIGUSR1, on_usr1); signal(SIGUSR2, on_usr2);
    if (getenv("WORKLOAD_CPU")) {
        /* pinned, with its ticker (forked below, which inherits the mask), to one CPU: on a
         * guest with more, kswapd can run on another (the mask is one word: CPUs 0-63) */
        unsigned long mask = 1UL << atoi(getenv("WORKLOAD_CPU"));
        if (syscall(SYS_sched_setaffinity, 0, sizeof mask, &mask) != 0) perror("sched_setaffinity");
    }
    pid_t ticker = 0;
    if (getenv("WORKLOAD_TLB_TICK_US") && (ticker = fork()) == 0) {
        long us = atol(getenv("WORKLOAD_TLB_TICK_US"));
        struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
        while (getppid() != 1) nanosleep(&ts, NULL);
        _exit(0);
    }
    char *h = hot ? region(hot, hn) : NULL, *c = cold ? region(cold, cn) : NULL;
    if (getenv("WORKLOAD_NODE0_FREE_MIB")) fill_node0(atol(getenv("WORKLOAD_NODE0_FREE_MIB")));
    double cold_rate = getenv("WORKLOAD_COLD_TOUCH_PER_S") && cold ? atof(getenv("WORKLOAD_COLD_TOUCH_PER_S")) : 0;
    unsigned long cold_touches = 0;
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    pid_t child = 0;
    if (getenv("WORKLOAD_FORK") && (child = fork()) == 0) { for (;;) pause(); }
    printf("WORKLOAD_START child=%d pid=%d hot_pages=%zu cold_pages=%zu hot_node=%d cold_node=%d hot_addr=0x%lx cold_addr=0x%lx thp=%d anon_huge_kb=%ld mono=%.3f\n", (int)child, getpid(), hot / PAGE, cold / PAGE, hn, cn, (unsigned long)h, (unsigned long)c, thp, anon_huge_kb(), now());
    fflush(stdout);
    double t0 = now();
    unsigned long sweeps = 0;
    int ro = getenv("WORKLOAD_READONLY") != NULL;
    volatile uint64_t sink = 0;
    int phased = getenv("WORKLOAD_PHASED") != NULL, phase = 0;
    size_t half = (hot / 2 / PAGE) * PAGE;
    for (;;) {
        if (phased && next_phase != phase && phase < 2) {
            phase++;
            printf("WORKLOAD_PHASE n=%d pid=%d mono=%.3f\n", phase, getpid(), now());
            fflush(stdout);
        }
        /* one sweep: read-modify-write the pattern word of every hot page and one more line
         * (phased: [0, half), then [half, hot), then all of it) */
        size_t from = phased && phase == 1 ? half : 0, to = phased && phase == 0 ? half : hot;
        for (size_t i = from; i < to; i += PAGE) {
            uint64_t *w = (uint64_t *)(h + i);
            if (ro) { sink += *w + w[64]; continue; }
            *w = (*w & 0xffff000000000000ull) | ((*w + 1) & 0x0000ffffffffffffull);
            w[64] += 1;
        }
        sweeps++;
        if (cold_rate > 0) {
            unsigned long due = (unsigned long)(cold_rate * (now() - t0));
            for (; cold_touches < due; cold_touches++) {
                rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
                uint64_t *w = (uint64_t *)(c + (rng % (cold / PAGE)) * PAGE);
                *w = (*w & 0xffff000000000000ull) | ((*w + 1) & 0x0000ffffffffffffull);
            }
        }
        if (stop || (secs > 0 && now() - t0 >= secs)) break;
        if (report) {
            report = 0;
            long a = 0, b = 0, x = 0, y = 0, o = 0;
            count(h, hot, &a, &b, &o); if (cold && !getenv("WORKLOAD_REPORT_HOT")) count(c, cold, &x, &y, &o);
            printf("WORKLOAD_REPORT pid=%d hot_node0=%ld hot_node1=%ld cold_node0=%ld cold_node1=%ld other=%ld sweeps=%lu cold_touches=%lu data_node=%d heap_node=%d stack_node=%d mono=%.3f\n", getpid(), a, b, x, y, o, sweeps, cold_touches, small_node[0], small_node[1], small_node[2], now());
            fflush(stdout);
        }
        if (!hot) usleep(10000);
    }
    long a = 0, b = 0, x = 0, y = 0, o = 0;
    if (hot) count(h, hot, &a, &b, &o);
    if (cold) count(c, cold, &x, &y, &o);
    long bad = (hot ? corrupt(h, hot) : 0) + (cold ? corrupt(c, cold) : 0);
    if (child > 0) kill(child, SIGKILL);
    if (ticker > 0) kill(ticker, SIGKILL);
    printf("WORKLOAD_RESULT pid=%d hot_node0=%ld hot_node1=%ld cold_node0=%ld cold_node1=%ld other=%ld sweeps=%lu cold_touches=%lu corrupt=%ld\n",
           getpid(), a, b, x, y, o, sweeps, cold_touches, bad);
    fflush(stdout);
    return bad ? 1 : 0;
}
