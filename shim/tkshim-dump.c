/* tkshim-dump.c - read a tierkit shim profile log (format: README.md).
 * Usage: tkshim-dump [--records] LOG
 * Prints one line per allocation site:
 *   site <hash> count=<allocations> size=<first size> bytes=<total> freed=<n> mean_life_ns=<ns>
 * and, with --records, every record. Exit 1 on a malformed log (naming the offset).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rec { uint8_t kind, pad[3]; uint32_t tid; uint64_t site, size, addr, time_ns; };
struct site { uint64_t site, count, size, bytes, freed, life; };
struct live { uint64_t addr, site, t; };

static struct site *sites; static size_t nsites, capsites;
static struct live *lives; static size_t nlives, caplives;

static struct site *site_of(uint64_t h)
{
    for (size_t i = 0; i < nsites; i++) if (sites[i].site == h) return &sites[i];
    if (nsites == capsites) { capsites = capsites ? 2 * capsites : 64; sites = realloc(sites, capsites * sizeof *sites); }
    memset(&sites[nsites], 0, sizeof sites[0]); sites[nsites].site = h;
    return &sites[nsites++];
}

int main(int argc, char **argv)
{
    int records = argc > 2 && !strcmp(argv[1], "--records");
    const char *path = argv[argc - 1];
    if (argc < 2) { fprintf(stderr, "usage: tkshim-dump [--records] LOG\n"); return 2; }
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return 2; }
    unsigned char hdr[16];
    if (fread(hdr, 1, 16, f) != 16 || memcmp(hdr, "TKSHIM01", 8)) { fprintf(stderr, "%s: not a tierkit shim log (bad header)\n", path); return 1; }
    uint32_t ver, rs; memcpy(&ver, hdr + 8, 4); memcpy(&rs, hdr + 12, 4);
    if (ver != 1 || rs != sizeof(struct rec)) { fprintf(stderr, "%s: version %u record size %u not supported\n", path, ver, rs); return 1; }
    struct rec r; uint64_t n = 0;
    size_t got;
    while ((got = fread(&r, 1, sizeof r, f)) == sizeof r) {
        n++;
        if (records) printf("%c tid=%u site=%016" PRIx64 " size=%" PRIu64 " addr=%#" PRIx64 " t=%" PRIu64 "\n",
                            " AFMU"[r.kind < 5 ? r.kind : 0], r.tid, r.site, r.size, r.addr, r.time_ns);
        if (r.kind == 1 || r.kind == 3) {
            struct site *s = site_of(r.site);
            if (!s->count) s->size = r.size;
            s->count++; s->bytes += r.size;
            if (nlives == caplives) { caplives = caplives ? 2 * caplives : 1024; lives = realloc(lives, caplives * sizeof *lives); }
            lives[nlives++] = (struct live){ r.addr, r.site, r.time_ns };
        } else if (r.kind == 2 || r.kind == 4) {
            for (size_t i = nlives; i-- > 0;) if (lives[i].addr == r.addr) {
                struct site *s = site_of(lives[i].site);
                s->freed++; s->life += r.time_ns - lives[i].t;
                lives[i] = lives[--nlives];
                break;
            }
        } else { fprintf(stderr, "%s: bad record kind %u at offset %" PRIu64 "\n", path, r.kind, 16 + (n - 1) * 40); return 1; }
    }
    if (got) { fprintf(stderr, "%s: truncated record at offset %" PRIu64 "\n", path, 16 + n * 40); return 1; }
    for (size_t i = 0; i < nsites; i++)
        printf("site %016" PRIx64 " count=%" PRIu64 " size=%" PRIu64 " bytes=%" PRIu64 " freed=%" PRIu64 " mean_life_ns=%" PRIu64 "\n",
               sites[i].site, sites[i].count, sites[i].size, sites[i].bytes, sites[i].freed, sites[i].freed ? sites[i].life / sites[i].freed : 0);
    printf("records %" PRIu64 " sites %zu live %zu\n", n, nsites, nlives);
    return 0;
}
