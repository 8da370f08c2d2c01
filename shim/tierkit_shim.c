/* tierkit_shim.c - Soar's allocation shim (LD_PRELOAD): profiles the object flow of a program and
 * binds chosen allocation sites to NUMA nodes. Format and usage: shim/README.md.
 *
 * Interposes malloc, calloc, realloc, free, posix_memalign, aligned_alloc, mmap and munmap.
 *   TIERKIT_SHIM_MODE       off (default) | profile | place
 *   TIERKIT_SHIM_LOG        profile: log file ("%p" becomes the pid)
 *   TIERKIT_SHIM_PLACEMENT  place: placement file (site -> node)
 *   TIERKIT_SHIM_MIN_BYTES  smallest allocation profiled or placed (default 4096)
 *   TIERKIT_SHIM_DEPTH      frames in the call-chain hash (default 1: the caller; more needs
 *                           frame pointers in the program, -fno-omit-frame-pointer)
 *   TIERKIT_SHIM_FAST_NODE / TIERKIT_SHIM_SLOW_NODE: nodes for "fast" / "slow" (default 0 / 1)
 *
 * No recursion through its own allocations: the real functions come from dlsym(RTLD_NEXT); while
 * dlsym runs, allocations are served from a static bootstrap arena; a thread-local depth counter
 * sends any allocation made inside the shim (dladdr, stdio of the placement parser) straight to
 * the real functions. Thread-safe: the log buffer and the registry of placed blocks each have a
 * spinlock, taken around fork() by pthread_atfork handlers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TK_EXPORT __attribute__((visibility("default")))
#define MPOL_PREFERRED 1
#define PAGE 4096UL

enum { MODE_OFF, MODE_PROFILE, MODE_PLACE };
enum { REC_ALLOC = 1, REC_FREE = 2, REC_MMAP = 3, REC_MUNMAP = 4 };

/* The log: a 16-byte header, then 40-byte little-endian records (README.md). */
struct rec {
    uint8_t kind, pad[3];
    uint32_t tid;
    uint64_t site, size, addr, time_ns;
};
_Static_assert(sizeof(struct rec) == 40, "record layout");

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);

static atomic_int state;                 /* 0 uninitialised, 1 initialising, 2 ready */
static __thread int depth __attribute__((tls_model("initial-exec")));
static __thread int initialiser __attribute__((tls_model("initial-exec")));
static int mode, max_depth = 1, fast_node = 0, slow_node = 1;
static size_t min_bytes = 4096;

/* ---- bootstrap arena (used only while dlsym runs) ---- */
static char arena[256 << 10] __attribute__((aligned(64)));
static size_t arena_used;
static int in_arena(const void *p) { return (const char *)p >= arena && (const char *)p < arena + sizeof arena; }
static void *arena_alloc(size_t n, size_t align)
{
    if (align < 16) align = 16;
    size_t off = (arena_used + 16 + align - 1) & ~(align - 1);
    if (off + n > sizeof arena) return NULL;
    ((size_t *)(arena + off))[-1] = n;   /* size, for realloc */
    arena_used = off + n;
    return arena + off;
}

/* ---- spinlocks ---- */
static atomic_flag log_lock = ATOMIC_FLAG_INIT, reg_lock = ATOMIC_FLAG_INIT;
static void lock(atomic_flag *l) { while (atomic_flag_test_and_set_explicit(l, memory_order_acquire)) sched_yield(); }
static void unlock(atomic_flag *l) { atomic_flag_clear_explicit(l, memory_order_release); }

/* ---- the log ---- */
static int log_fd = -1;
static struct rec logbuf[4096];
static size_t loglen;

static uint64_t now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (uint64_t)t.tv_sec * 1000000000ull + t.tv_nsec; }

static void flush_locked(void)
{
    size_t n = loglen * sizeof(struct rec), off = 0;
    while (off < n) {
        ssize_t w = write(log_fd, (char *)logbuf + off, n - off);
        if (w <= 0) { if (w < 0 && errno == EINTR) continue; break; }
        off += w;
    }
    loglen = 0;
}

static void log_rec(int kind, uint64_t site, uint64_t size, const void *addr)
{
    if (log_fd < 0) return;
    struct rec r = { .kind = (uint8_t)kind, .tid = (uint32_t)syscall(SYS_gettid), .site = site, .size = size,
                     .addr = (uint64_t)(uintptr_t)addr, .time_ns = now_ns() };
    lock(&log_lock);
    logbuf[loglen++] = r;
    if (loglen == sizeof logbuf / sizeof logbuf[0]) flush_locked();
    unlock(&log_lock);
}

/* ---- call-chain hash: (object name, offset) of each frame, stable under ASLR ---- */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 0x100000001b3ull; }
    return h;
}
#define CACHE 4096
static struct { _Atomic uintptr_t ra; _Atomic uint64_t h; } frame_cache[CACHE];

static uint64_t frame_hash(uintptr_t ra)
{
    size_t i = (ra >> 4) % CACHE;
    if (atomic_load_explicit(&frame_cache[i].ra, memory_order_acquire) == ra)
        return atomic_load_explicit(&frame_cache[i].h, memory_order_relaxed);
    Dl_info info;
    uint64_t h = 0xcbf29ce484222325ull;
    if (dladdr((void *)ra, &info) && info.dli_fname) {
        const char *base = strrchr(info.dli_fname, '/');
        base = base ? base + 1 : info.dli_fname;
        uint64_t off = ra - (uintptr_t)info.dli_fbase;
        h = fnv(h, base, strlen(base));
        h = fnv(h, &off, sizeof off);
    } else {
        h = fnv(h, &ra, sizeof ra);
    }
    atomic_store_explicit(&frame_cache[i].ra, 0, memory_order_relaxed);
    atomic_store_explicit(&frame_cache[i].h, h, memory_order_relaxed);
    atomic_store_explicit(&frame_cache[i].ra, ra, memory_order_release);
    return h;
}

/* Frame-pointer walk for depth > 1: each saved frame pointer must lie above the last one, within
 * 256 KiB of it, 8-byte aligned; without frame pointers the walk stops early (or hashes what the
 * stack holds: consistent run to run for a given binary, but not a true call chain). */
static __attribute__((noinline)) uint64_t site_hash(uintptr_t caller)
{
    uint64_t h = frame_hash(caller);
    if (max_depth > 1) {
        uintptr_t *fp = __builtin_frame_address(0);
        fp = (uintptr_t *)fp[0]; /* the interposed function's frame */
        for (int d = 1; d < max_depth && fp; d++) {
            uintptr_t *next = (uintptr_t *)fp[0];
            uintptr_t ra = fp[1];
            if (!ra) break;
            if (d > 0) h = h * 31 + frame_hash(ra);
            if ((uintptr_t)next <= (uintptr_t)fp || (uintptr_t)next - (uintptr_t)fp > (256 << 10) || ((uintptr_t)next & 7)) break;
            fp = next;
        }
    }
    return h ? h : 1;
}

/* ---- placement ---- */
#define MAX_PLACE 4096
static struct { uint64_t site; int node; } places[MAX_PLACE];
static int nplaces;

static int place_node(uint64_t site)
{
    int lo = 0, hi = nplaces - 1;
    while (lo <= hi) {
        int m = (lo + hi) / 2;
        if (places[m].site == site) return places[m].node;
        if (places[m].site < site) lo = m + 1; else hi = m - 1;
    }
    return -1;
}

static void die(const char *msg)
{
    if (write(2, "tierkit_shim: ", 14) < 0 || write(2, msg, strlen(msg)) < 0 || write(2, "\n", 1) < 0) {}
    _exit(127);
}

static int cmp_place(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Lines: "<site hex> <node:N | N | fast | slow>", '#' starts a comment. */
static void load_placement(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die("cannot open TIERKIT_SHIM_PLACEMENT");
    static char buf[1 << 20];
    ssize_t n = 0, r;
    while ((r = read(fd, buf + n, sizeof buf - 1 - n)) > 0) n += r;
    close(fd);
    buf[n] = 0;
    int line = 0;
    for (char *s = buf, *e; *s; s = e) {
        e = strchr(s, '\n'); if (e) *e++ = 0; else e = s + strlen(s);
        line++;
        char *hash = strchr(s, '#'); if (hash) *hash = 0;
        char *tok = strtok(s, " \t\r"); if (!tok) continue;
        char *end; uint64_t site = strtoull(tok, &end, 16);
        if (*end || end == tok) die("placement: bad site hash (expected hex)");
        char *t = strtok(NULL, " \t\r");
        if (!t) die("placement: missing target after site");
        int node;
        if (!strcmp(t, "fast")) node = fast_node;
        else if (!strcmp(t, "slow")) node = slow_node;
        else { if (!strncmp(t, "node:", 5)) t += 5; node = (int)strtol(t, &end, 10); if (*end || node < 0 || node > 1023) die("placement: bad node"); }
        if (nplaces == MAX_PLACE) die("placement: more than 4096 sites");
        places[nplaces].site = site; places[nplaces].node = node; nplaces++;
    }
    qsort(places, nplaces, sizeof places[0], cmp_place);
}

/* ---- placed blocks: own pages, bound with mbind, kept in a registry for free/realloc ---- */
#define REG 65536
static struct { uintptr_t ptr, base; size_t len, size; } reg[REG];
static size_t reg_count;

static size_t reg_slot(uintptr_t p) { return (p >> 4) * 0x9e3779b97f4a7c15ull >> 48; }
static int reg_put(uintptr_t p, uintptr_t base, size_t len, size_t size)
{
    lock(&reg_lock);
    if (reg_count >= REG * 3 / 4) { unlock(&reg_lock); return 0; }
    size_t i = reg_slot(p);
    while (reg[i].ptr && reg[i].ptr != 1) i = (i + 1) % REG;
    reg[i].ptr = p; reg[i].base = base; reg[i].len = len; reg[i].size = size; reg_count++;
    unlock(&reg_lock);
    return 1;
}
/* Remove p; returns its entry (ptr 0 when not ours). Deleted slots become tombstones (1). */
static int reg_take(uintptr_t p, uintptr_t *base, size_t *len, size_t *size)
{
    if (!p || reg_count == 0) return 0;
    lock(&reg_lock);
    size_t i = reg_slot(p);
    for (size_t k = 0; k < REG && reg[i].ptr; k++, i = (i + 1) % REG) {
        if (reg[i].ptr == p) {
            *base = reg[i].base; *len = reg[i].len; *size = reg[i].size;
            reg[i].ptr = 1; reg_count--;
            unlock(&reg_lock);
            return 1;
        }
    }
    unlock(&reg_lock);
    return 0;
}

static void bind(void *addr, size_t len, int node)
{
    unsigned long mask[16] = {0};
    mask[node / 64] = 1UL << (node % 64);
    syscall(SYS_mbind, addr, len, MPOL_PREFERRED, mask, 1024, 0);
}

static void *placed_alloc(size_t size, size_t align, int node)
{
    if (align < 16) align = 16;
    size_t len = (size + align + PAGE - 1) & ~(PAGE - 1);
    void *base = real_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return NULL;
    bind(base, len, node);
    uintptr_t p = (uintptr_t)base; /* page-aligned: any align <= PAGE holds at the base */
    if (align > PAGE) { real_munmap(base, len); return NULL; }
    if (!reg_put(p, (uintptr_t)base, len, size)) { real_munmap(base, len); return NULL; }
    return (void *)p;
}

/* ---- init ---- */
static void prepare(void) { lock(&log_lock); lock(&reg_lock); }
static void parent(void) { unlock(&reg_lock); unlock(&log_lock); }
static void child(void) { loglen = 0; unlock(&reg_lock); unlock(&log_lock); } /* the parent flushes its records */

static void init(void)
{
    int expect = 0;
    if (!atomic_compare_exchange_strong(&state, &expect, 1)) {
        while (atomic_load(&state) != 2) sched_yield();
        return;
    }
    initialiser = 1;
    real_malloc = dlsym(RTLD_NEXT, "malloc");
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_free = dlsym(RTLD_NEXT, "free");
    real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    real_mmap = dlsym(RTLD_NEXT, "mmap");
    real_munmap = dlsym(RTLD_NEXT, "munmap");
    initialiser = 0;
    if (!real_malloc || !real_free || !real_calloc || !real_realloc || !real_mmap || !real_munmap) die("dlsym(RTLD_NEXT) failed");
    depth++;
    const char *m = getenv("TIERKIT_SHIM_MODE"), *v;
    if ((v = getenv("TIERKIT_SHIM_MIN_BYTES"))) min_bytes = strtoull(v, NULL, 0);
    if ((v = getenv("TIERKIT_SHIM_DEPTH"))) { max_depth = atoi(v); if (max_depth < 1 || max_depth > 16) die("TIERKIT_SHIM_DEPTH must be 1..16"); }
    if ((v = getenv("TIERKIT_SHIM_FAST_NODE"))) fast_node = atoi(v);
    if ((v = getenv("TIERKIT_SHIM_SLOW_NODE"))) slow_node = atoi(v);
    if (!m || !strcmp(m, "off") || !*m) mode = MODE_OFF;
    else if (!strcmp(m, "profile")) {
        mode = MODE_PROFILE;
        const char *path = getenv("TIERKIT_SHIM_LOG");
        if (!path) die("profile mode needs TIERKIT_SHIM_LOG");
        char p[4096]; size_t j = 0;
        for (const char *s = path; *s && j < sizeof p - 24; s++) {
            if (s[0] == '%' && s[1] == 'p') { j += snprintf(p + j, sizeof p - j, "%d", getpid()); s++; }
            else p[j++] = *s;
        }
        p[j] = 0;
        log_fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log_fd < 0) die("cannot open TIERKIT_SHIM_LOG");
        if (lseek(log_fd, 0, SEEK_END) == 0) {
            unsigned char hdr[16] = "TKSHIM01";
            uint32_t ver = 1, rs = sizeof(struct rec);
            memcpy(hdr + 8, &ver, 4); memcpy(hdr + 12, &rs, 4);
            if (write(log_fd, hdr, 16) != 16) die("cannot write the log header");
        }
    } else if (!strcmp(m, "place")) {
        mode = MODE_PLACE;
        const char *path = getenv("TIERKIT_SHIM_PLACEMENT");
        if (!path) die("place mode needs TIERKIT_SHIM_PLACEMENT");
        load_placement(path);
    } else die("TIERKIT_SHIM_MODE must be off, profile or place");
    pthread_atfork(prepare, parent, child);
    depth--;
    atomic_store(&state, 2);
}

__attribute__((constructor)) static void ctor(void) { if (atomic_load(&state) != 2) init(); }
__attribute__((destructor)) static void dtor(void)
{
    if (log_fd >= 0) { lock(&log_lock); flush_locked(); unlock(&log_lock); }
}

/* Enter: 1 when this call should be profiled/placed, 0 to pass straight through. */
static inline int enter(void)
{
    if (atomic_load_explicit(&state, memory_order_acquire) != 2) {
        if (initialiser) return -1;   /* dlsym is running: use the arena */
        init();
    }
    return depth == 0 && mode != MODE_OFF;
}

#define CALLER ((uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0)))

/* Common path of the allocating functions. */
static void *alloc_common(size_t size, size_t align, int zero, uintptr_t caller, int *handled)
{
    *handled = 0;
    if (size < min_bytes) return NULL;
    depth++;
    uint64_t site = site_hash(caller);
    void *p = NULL;
    if (mode == MODE_PLACE) {
        int node = place_node(site);
        if (node >= 0) { p = placed_alloc(size, align, node); *handled = p != NULL; (void)zero; /* mmap memory is zeroed */ }
    }
    depth--;
    return p ? p : (void *)(uintptr_t)site; /* the caller logs after the real call */
}

TK_EXPORT void *malloc(size_t n)
{
    int e = enter();
    if (e < 0) return arena_alloc(n, 16);
    if (!e) return real_malloc(n);
    int handled; void *r = alloc_common(n, 16, 0, CALLER, &handled);
    if (handled) return r;
    uint64_t site = (uint64_t)(uintptr_t)r;
    void *p = real_malloc(n);
    if (mode == MODE_PROFILE && n >= min_bytes && p) { depth++; log_rec(REC_ALLOC, site, n, p); depth--; }
    return p;
}

TK_EXPORT void *calloc(size_t a, size_t b)
{
    int e = enter();
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) { errno = ENOMEM; return NULL; }
    if (e < 0) { void *p = arena_alloc(n, 16); if (p) memset(p, 0, n); return p; }
    if (!e) return real_calloc(a, b);
    int handled; void *r = alloc_common(n, 16, 1, CALLER, &handled);
    if (handled) return r;
    uint64_t site = (uint64_t)(uintptr_t)r;
    void *p = real_calloc(a, b);
    if (mode == MODE_PROFILE && n >= min_bytes && p) { depth++; log_rec(REC_ALLOC, site, n, p); depth--; }
    return p;
}

TK_EXPORT void free(void *p)
{
    if (!p || in_arena(p)) return;
    int e = enter();
    if (e < 0) return;
    uintptr_t base; size_t len, size;
    if (reg_take((uintptr_t)p, &base, &len, &size)) {
        real_munmap((void *)base, len);
        if (mode == MODE_PROFILE) log_rec(REC_FREE, 0, size, p);
        return;
    }
    if (e && mode == MODE_PROFILE) { depth++; log_rec(REC_FREE, 0, 0, p); depth--; }
    real_free(p);
}

TK_EXPORT void *realloc(void *p, size_t n)
{
    int e = enter();
    if (e < 0 || in_arena(p)) {
        if (e < 0) { void *q = arena_alloc(n, 16); if (q && p) memcpy(q, p, ((size_t *)p)[-1] < n ? ((size_t *)p)[-1] : n); return q; }
        void *q = malloc(n);
        if (q && p) memcpy(q, p, ((size_t *)p)[-1] < n ? ((size_t *)p)[-1] : n);
        return q;
    }
    uintptr_t base; size_t len, size;
    if (p && reg_take((uintptr_t)p, &base, &len, &size)) {   /* ours: move to a new block */
        depth++;
        uint64_t site = site_hash(CALLER);
        int node = mode == MODE_PLACE ? place_node(site) : -1;
        void *q = node >= 0 && n ? placed_alloc(n, 16, node) : real_malloc(n ? n : 1);
        depth--;
        if (q) memcpy(q, p, size < n ? size : n);
        real_munmap((void *)base, len);
        return q;
    }
    if (!e) return real_realloc(p, n);
    if (!p) {
        int handled; void *r = alloc_common(n, 16, 0, CALLER, &handled);
        if (handled) return r;
        void *q = real_realloc(NULL, n);
        if (mode == MODE_PROFILE && n >= min_bytes && q) { depth++; log_rec(REC_ALLOC, (uint64_t)(uintptr_t)r, n, q); depth--; }
        return q;
    }
    depth++;
    uint64_t site = mode == MODE_PROFILE ? site_hash(CALLER) : 0;
    depth--;
    void *q = real_realloc(p, n);
    if (mode == MODE_PROFILE && q) {
        depth++;
        log_rec(REC_FREE, 0, 0, p);
        if (n >= min_bytes) log_rec(REC_ALLOC, site, n, q);
        depth--;
    }
    return q;
}

TK_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    int e = enter();
    if (e < 0) { *out = arena_alloc(n, align); return *out ? 0 : ENOMEM; }
    if (!e) return real_posix_memalign(out, align, n);
    if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
    int handled; void *r = alloc_common(n, align, 0, CALLER, &handled);
    if (handled) { *out = r; return 0; }
    int rc = real_posix_memalign(out, align, n);
    if (mode == MODE_PROFILE && n >= min_bytes && rc == 0) { depth++; log_rec(REC_ALLOC, (uint64_t)(uintptr_t)r, n, *out); depth--; }
    return rc;
}

TK_EXPORT void *aligned_alloc(size_t align, size_t n)
{
    int e = enter();
    if (e < 0) return arena_alloc(n, align);
    if (!e) return real_aligned_alloc(align, n);
    int handled; void *r = alloc_common(n, align, 0, CALLER, &handled);
    if (handled) return r;
    void *p = real_aligned_alloc(align, n);
    if (mode == MODE_PROFILE && n >= min_bytes && p) { depth++; log_rec(REC_ALLOC, (uint64_t)(uintptr_t)r, n, p); depth--; }
    return p;
}

TK_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    int e = enter();
    if (e <= 0) {
        if (e < 0 || !real_mmap) return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
        return real_mmap(addr, len, prot, flags, fd, off);
    }
    void *p = real_mmap(addr, len, prot, flags, fd, off);
    if (p == MAP_FAILED || !(flags & MAP_ANONYMOUS) || len < min_bytes) return p;
    depth++;
    uint64_t site = site_hash(CALLER);
    if (mode == MODE_PROFILE) log_rec(REC_MMAP, site, len, p);
    else if (mode == MODE_PLACE) { int node = place_node(site); if (node >= 0) bind(p, len, node); }
    depth--;
    return p;
}

TK_EXPORT int munmap(void *addr, size_t len)
{
    int e = enter();
    if (e < 0 || !real_munmap) return (int)syscall(SYS_munmap, addr, len);
    if (e && mode == MODE_PROFILE && len >= min_bytes) { depth++; log_rec(REC_MUNMAP, 0, len, addr); depth--; }
    return real_munmap(addr, len);
}
