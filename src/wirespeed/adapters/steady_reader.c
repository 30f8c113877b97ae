/* wirespeed's compiled steady reader: the agent's sample lines while nothing changes, made and written here so
 * that a tick costs the wake-up and the kernel's reads and no interpreter (about 105 us a line against 170-210
 * in Python on a 16-core machine, at 100 lines a second).
 *
 * The agent (Python) makes every full reading and lays out the steady line; it hands that layout here and this
 * process makes the ticks that follow, on the agent's schedule, writing the lines to its stdout (the agent's),
 * until the layout is due again (RESCAN), anything differs from it (CHANGED), the count is reached (COUNT), it is
 * told to stop (SIGUSR1 or SIGTERM: STOP), stdout is closed (PIPE), or /proc/stat is not as the kernel lays it
 * out (CPU). It then writes what it holds and answers on the reply fd; the agent makes the next line itself.
 *
 * Commands on stdin, one a line; a record with text carries its byte count last and the text on the next line:
 *   LAYOUT deadline_ns cpu_interval_ns flush_ns        a new layout (the records below belong to it)
 *   NAME pos len / token                               /proc/net/dev's token at pos must be this one
 *   STATS n_stats len / ifname                         ETHTOOL_GSTATS of ifname, n_stats values expected
 *   RDMA len / errors                                  an RDMA object; `errors` is its constant tail ("k":v,...)
 *   WORD nfiles len / name                             a counter of the last RDMA object, the sum of nfiles
 *   FILE len / path                                    one of the last WORD's files
 *   PART kind a b len / literal                        the literal, then the value of kind (0 none, 1 t, 2 wall,
 *                                                      3 stat a's value b, 4 netdev token a, 5 RDMA object a, 6 cpu)
 *   RUN next_tick_ns interval_ns remaining last_cpu_ns run ticks (remaining 0: no limit)
 * Answer on the reply fd (argv[1]) after each RUN: DONE ticks next_tick_ns last_cpu_ns reason
 * Built by wirespeed/adapters/steadyreader.py with the node's C compiler; nothing else uses it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SIOCETHTOOL_ 0x8946
#define ETHTOOL_GSTATS_ 0x1d
#define HEADROOM 1024 /* extra values in the buffer: a string set that grows between reads fits without a fault */

enum { K_NONE, K_T, K_WALL, K_STAT, K_NETDEV, K_RDMA, K_CPU };
enum { R_RESCAN, R_CHANGED, R_COUNT, R_STOP, R_PIPE, R_CPU };
static const char *REASONS[] = {"rescan", "changed", "count", "stop", "pipe", "cpu"};

struct buf { char *p; size_t len, cap; };
struct part { char *lit; size_t litlen; int kind, a, b; };
struct stats { char name[IFNAMSIZ]; uint32_t n; unsigned char *region; size_t region_size; uint32_t *head; };
struct word { char *name; int nfiles; int *fds; };
struct rdma { char *errors; size_t errlen; int nwords; struct word *words; struct buf text; };
struct check { int pos; char *token; };

static struct part *parts; static int nparts;
static struct stats *stats; static int nstats;
static struct rdma *rdmas; static int nrdmas;
static struct check *checks; static int nchecks;
static int64_t deadline_ns, cpu_interval_ns, flush_ns;
static int netdev_fd = -1, stat_fd = -1, sock = -1, reply_fd = -1;
static struct buf netdev_text, stat_text, cpu_json, held;
static char **tokens; static int ntokens, tokens_cap;
static volatile sig_atomic_t stopping;

static void on_stop(int sig) { (void)sig; stopping = 1; }

static void die(const char *what) {
    fprintf(stderr, "steady_reader: %s\n", what);
    exit(2);
}

static void reserve(struct buf *b, size_t more) {
    if (b->len + more + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) die("out of memory");
    b->p = p;
    b->cap = cap;
}

static void put(struct buf *b, const char *s, size_t n) {
    reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void put_u64(struct buf *b, uint64_t v) {
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    put(b, tmp, (size_t)n);
}

/* A double as Python's repr writes it: the shortest of 15-17 digits that reads back the same, with a ".0" on a
 * whole number, so the line has the same JSON types as the agent's. */
static void put_double(struct buf *b, double v) {
    char tmp[48];
    for (int p = 15; p <= 17; p++) {
        snprintf(tmp, sizeof tmp - 2, "%.*g", p, v);
        if (p == 17 || strtod(tmp, NULL) == v) break;
    }
    if (!strpbrk(tmp, ".eEn")) strcat(tmp, ".0");
    put(b, tmp, strlen(tmp));
}

static int64_t clock_ns(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The whole of a /proc file, read from its start on a descriptor kept open. */
static int read_whole(int fd, struct buf *b) {
    b->len = 0;
    for (;;) {
        reserve(b, 65536);
        ssize_t r = pread(fd, b->p + b->len, 65536, (off_t)b->len);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        b->len += (size_t)r;
        b->p[b->len] = 0;
        if (r == 0 || (r < 65536 && b->len < 65536)) return 0;
    }
}

static int all_digits(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

/* Split in place on whitespace, as Python's str.split(). */
static void split(char *s) {
    ntokens = 0;
    for (;;) {
        while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r' || *s == '\f' || *s == '\v') s++;
        if (!*s) return;
        if (ntokens == tokens_cap) {
            tokens_cap = tokens_cap ? 2 * tokens_cap : 1024;
            tokens = realloc(tokens, sizeof *tokens * (size_t)tokens_cap);
            if (!tokens) die("out of memory");
        }
        tokens[ntokens++] = s;
        while (*s && !(*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r' || *s == '\f' || *s == '\v')) s++;
        if (*s) *s++ = 0;
    }
}

/* The cores of /proc/stat as `counters.cores_json` makes them: `[[user,nice,...],...]` from the cpuN lines'
 * first 8 fields, digits as they stand. 0 when the text is not laid out as the kernel lays it out. */
static int cores_json(char *text) {
    cpu_json.len = 0;
    char *end = strstr(text, "\nintr");
    if (!end || strncmp(text, "cpu ", 4) != 0) return 0;
    *end = 0;
    char *line = strchr(text, '\n');
    int rows = 0;
    put(&cpu_json, "[", 1);
    while (line && line < end) {
        line++;
        char *next = strchr(line, '\n');
        if (next) *next = 0;
        if (strncmp(line, "cpu", 3) != 0) return 0;
        char *p = line + 3, *name_end = p;
        while (*name_end >= '0' && *name_end <= '9') name_end++;
        if (name_end == p || (*name_end != ' ' && *name_end != '\t')) return 0;
        if (rows++) put(&cpu_json, ",", 1);
        put(&cpu_json, "[", 1);
        p = name_end;
        for (int f = 0; f < 8; f++) {
            while (*p == ' ' || *p == '\t') p++;
            if (!*p) {
                if (f == 0) return 0;
                break;
            }
            char *start = p;
            while (*p >= '0' && *p <= '9') p++;
            if (p == start || (*p && *p != ' ' && *p != '\t')) return 0;
            if (f) put(&cpu_json, ",", 1);
            put(&cpu_json, start, (size_t)(p - start));
        }
        put(&cpu_json, "]", 1);
        line = next;
    }
    put(&cpu_json, "]", 1);
    return 1;
}

static int read_stats(struct stats *s) {
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, s->name, IFNAMSIZ);
    s->head[0] = ETHTOOL_GSTATS_;
    s->head[1] = s->n;
    ifr.ifr_data = (char *)s->head;
    if (ioctl(sock, SIOCETHTOOL_, &ifr) < 0) return 0;
    return s->head[1] == s->n; /* a count that changed: the agent reads the names again */
}

static int read_rdma(struct rdma *r) {
    r->text.len = 0;
    put(&r->text, "{", 1);
    for (int w = 0; w < r->nwords; w++) {
        uint64_t sum = 0;
        int found = 0;
        for (int f = 0; f < r->words[w].nfiles; f++) {
            char tmp[64];
            int fd = r->words[w].fds[f];
            ssize_t n = fd < 0 ? -1 : pread(fd, tmp, sizeof tmp - 1, 0);
            if (n <= 0) continue;
            tmp[n] = 0;
            char *e;
            errno = 0;
            unsigned long long v = strtoull(tmp, &e, 10);
            if (e == tmp || errno) continue; /* no number, as int() finds none */
            while (*e == ' ' || *e == '\n') e++;
            if (*e) continue;
            sum += v;
            found = 1;
        }
        if (!found) return 0;
        if (w) put(&r->text, ",", 1);
        put(&r->text, "\"", 1);
        put(&r->text, r->words[w].name, strlen(r->words[w].name));
        put(&r->text, "\":", 2);
        put_u64(&r->text, sum);
    }
    if (r->errlen) {
        if (r->nwords) put(&r->text, ",", 1);
        put(&r->text, r->errors, r->errlen);
    }
    put(&r->text, "}", 1);
    return 1;
}

/* All of it to stdout; a full pipe set non-blocking by someone else is waited on, not taken for a closed one. */
static int write_all(const char *p, size_t n) {
    while (n) {
        ssize_t w = write(1, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                struct pollfd out = {1, POLLOUT, 0};
                if (poll(&out, 1, -1) < 0 && errno != EINTR) return 0;
                continue;
            }
            return 0;
        }
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

/* One tick's line into `held`; a reason when it cannot be made (the tick is then left to the agent). */
static int make_line(int64_t now, int64_t *last_cpu) {
    int64_t wall = clock_ns(CLOCK_REALTIME);
    for (int i = 0; i < nstats; i++)
        if (!read_stats(&stats[i])) return R_CHANGED;
    if (netdev_fd >= 0) {
        if (read_whole(netdev_fd, &netdev_text) < 0) return R_CHANGED;
        split(netdev_text.p);
        for (int i = 0; i < nchecks; i++)
            if (checks[i].pos >= ntokens || strcmp(tokens[checks[i].pos], checks[i].token) != 0) return R_CHANGED;
    }
    for (int i = 0; i < nparts; i++)
        if (parts[i].kind == K_NETDEV && (parts[i].a >= ntokens || !all_digits(tokens[parts[i].a]))) return R_CHANGED;
    for (int i = 0; i < nrdmas; i++)
        if (!read_rdma(&rdmas[i])) return R_CHANGED;
    int with_cpu = now - *last_cpu >= cpu_interval_ns;
    if (with_cpu) {
        if (read_whole(stat_fd, &stat_text) < 0 || !cores_json(stat_text.p)) return R_CPU;
        *last_cpu = now;
    }
    for (int i = 0; i < nparts; i++) {
        struct part *p = &parts[i];
        put(&held, p->lit, p->litlen);
        switch (p->kind) {
        case K_T: put_double(&held, (double)now / 1e9); break;
        case K_WALL: put_double(&held, (double)wall / 1e9); break;
        case K_STAT: put_u64(&held, ((uint64_t *)(stats[p->a].head + 2))[p->b]); break;
        case K_NETDEV: put(&held, tokens[p->a], strlen(tokens[p->a])); break;
        case K_RDMA: put(&held, rdmas[p->a].text.p, rdmas[p->a].text.len); break;
        case K_CPU:
            if (with_cpu) put(&held, cpu_json.p, cpu_json.len);
            else put(&held, "[]", 2);
            break;
        default: break;
        }
    }
    put(&held, "\n", 1);
    return -1;
}

static void sleep_until(int64_t tick) {
    for (;;) { /* in steps of at most 0.1 s: a stop that came just before the sleep is still seen soon */
        int64_t now = clock_ns(CLOCK_MONOTONIC);
        if (stopping || now >= tick) return;
        int64_t until = tick - now > 100000000 ? now + 100000000 : tick;
        struct timespec at = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
    }
}

/* Ticks from next_tick on, as the agent's loop makes them: wait for the tick, make its line, hold it, write what
 * is held every flush_ns; a tick that cannot be made is left to the agent (next_tick is then that tick). */
static void run(int64_t next_tick, int64_t interval, long remaining, int64_t last_cpu) {
    long ticks = 0;
    int64_t held_since = 0;
    int reason;
    held.len = 0;
    for (;;) {
        int64_t now = clock_ns(CLOCK_MONOTONIC);
        if (next_tick < now) next_tick = now; /* fell behind: skip ticks rather than burst */
        sleep_until(next_tick);
        if (stopping) { reason = R_STOP; break; }
        now = clock_ns(CLOCK_MONOTONIC);
        if (now >= deadline_ns) { reason = R_RESCAN; break; }
        if (!held.len) held_since = next_tick;
        size_t before = held.len;
        int failed = make_line(now, &last_cpu);
        if (failed >= 0) { held.len = before; reason = failed; break; }
        ticks++;
        next_tick += interval;
        if (remaining && --remaining == 0) { reason = R_COUNT; break; }
        if (next_tick - held_since >= flush_ns - 1) {
            if (!write_all(held.p, held.len)) { held.len = 0; reason = R_PIPE; break; }
            held.len = 0;
        }
    }
    if (held.len && !write_all(held.p, held.len)) reason = R_PIPE;
    held.len = 0;
    char answer[160];
    int n = snprintf(answer, sizeof answer, "DONE %ld %lld %lld %s\n", ticks, (long long)next_tick,
                     (long long)last_cpu, REASONS[reason]);
    if (write(reply_fd, answer, (size_t)n) != n) exit(0); /* the agent is gone */
}

static void clear_layout(void) {
    for (int i = 0; i < nparts; i++) free(parts[i].lit);
    for (int i = 0; i < nstats; i++) munmap(stats[i].region, stats[i].region_size);
    for (int i = 0; i < nrdmas; i++) {
        for (int w = 0; w < rdmas[i].nwords; w++) {
            for (int f = 0; f < rdmas[i].words[w].nfiles; f++)
                if (rdmas[i].words[w].fds[f] >= 0) close(rdmas[i].words[w].fds[f]);
            free(rdmas[i].words[w].fds);
            free(rdmas[i].words[w].name);
        }
        free(rdmas[i].words);
        free(rdmas[i].errors);
        free(rdmas[i].text.p);
    }
    for (int i = 0; i < nchecks; i++) free(checks[i].token);
    free(parts); free(stats); free(rdmas); free(checks);
    parts = NULL; stats = NULL; rdmas = NULL; checks = NULL;
    nparts = nstats = nrdmas = nchecks = 0;
}

static char *text_of(FILE *in, long len) {
    if (len < 0 || len > (1L << 24)) die("bad length");
    char *t = malloc((size_t)len + 1);
    if (!t || fread(t, 1, (size_t)len, in) != (size_t)len || fgetc(in) != '\n') die("bad command text");
    t[len] = 0;
    return t;
}

#define GROW(array, count) \
    do { \
        void *p_ = realloc(array, sizeof *(array) * (size_t)((count) + 1)); \
        if (!p_) die("out of memory"); \
        array = p_; \
        memset(&(array)[count], 0, sizeof *(array)); \
    } while (0)

/* A guarded GSTATS buffer: it ends where a page that may not be written begins, so a reply longer than even
 * the headroom faults (EFAULT) instead of writing past it. */
static void map_stats(struct stats *s) {
    long page = sysconf(_SC_PAGESIZE);
    size_t size = 8 + 8 * ((size_t)s->n + HEADROOM);
    size_t data_pages = (size + (size_t)page - 1) / (size_t)page;
    s->region_size = (data_pages + 1) * (size_t)page;
    s->region = mmap(NULL, s->region_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s->region == MAP_FAILED) die("mmap");
    if (mprotect(s->region + data_pages * (size_t)page, (size_t)page, PROT_NONE) != 0) die("mprotect");
    s->head = (uint32_t *)(s->region + (data_pages * (size_t)page - size) / 8 * 8);
}

int main(int argc, char **argv) {
    if (argc != 2) die("usage: steady_reader REPLY_FD");
    reply_fd = atoi(argv[1]);
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlive the agent */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop; /* no SA_RESTART: a sleep ends at once */
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    netdev_fd = open("/proc/net/dev", O_RDONLY | O_CLOEXEC);
    stat_fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
    sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int uses_netdev = 0;
    FILE *in = stdin;
    char line[512];
    while (fgets(line, sizeof line, in)) {
        long long x, y, z, w;
        long len;
        int kind, a, b;
        if (sscanf(line, "LAYOUT %lld %lld %lld", &x, &y, &z) == 3) {
            clear_layout();
            deadline_ns = x; cpu_interval_ns = y; flush_ns = z;
            uses_netdev = 0;
        } else if (sscanf(line, "NAME %d %ld", &a, &len) == 2) {
            if (a < 0) die("bad NAME");
            GROW(checks, nchecks);
            checks[nchecks].pos = a;
            checks[nchecks++].token = text_of(in, len);
            uses_netdev = 1;
        } else if (sscanf(line, "STATS %d %ld", &a, &len) == 2) {
            char *name = text_of(in, len);
            if (strlen(name) >= IFNAMSIZ || a < 0) die("bad STATS");
            GROW(stats, nstats);
            strcpy(stats[nstats].name, name);
            free(name);
            stats[nstats].n = (uint32_t)a;
            map_stats(&stats[nstats++]);
        } else if (sscanf(line, "RDMA %ld", &len) == 1) {
            GROW(rdmas, nrdmas);
            rdmas[nrdmas].errors = text_of(in, len);
            rdmas[nrdmas++].errlen = (size_t)len;
        } else if (sscanf(line, "WORD %d %ld", &a, &len) == 2) {
            if (!nrdmas || a < 0) die("WORD outside RDMA");
            struct rdma *r = &rdmas[nrdmas - 1];
            GROW(r->words, r->nwords);
            r->words[r->nwords].name = text_of(in, len);
            r->words[r->nwords].fds = calloc((size_t)a + 1, sizeof(int));
            r->nwords++;
        } else if (sscanf(line, "FILE %ld", &len) == 1) {
            if (!nrdmas || !rdmas[nrdmas - 1].nwords) die("FILE outside WORD");
            struct rdma *r = &rdmas[nrdmas - 1];
            struct word *wd = &r->words[r->nwords - 1];
            char *path = text_of(in, len);
            wd->fds[wd->nfiles++] = open(path, O_RDONLY | O_CLOEXEC);
            free(path);
        } else if (sscanf(line, "PART %d %d %d %ld", &kind, &a, &b, &len) == 4) {
            GROW(parts, nparts);
            parts[nparts].lit = text_of(in, len);
            parts[nparts].litlen = (size_t)len;
            parts[nparts].kind = kind;
            parts[nparts].a = a;
            parts[nparts].b = b;
            if (kind == K_NETDEV) uses_netdev = 1;
            if ((kind == K_STAT && (a >= nstats || b < 0 || (uint32_t)b >= stats[a].n)) ||
                (kind == K_RDMA && a >= nrdmas) || kind < 0 || kind > K_CPU || a < 0)
                die("bad PART");
            nparts++;
        } else if (sscanf(line, "RUN %lld %lld %lld %lld", &x, &y, &z, &w) == 4) {
            if (uses_netdev && netdev_fd < 0) die("no /proc/net/dev");
            if (stat_fd < 0 || sock < 0) die("no /proc/stat or socket");
            int saved = netdev_fd;
            if (!uses_netdev) netdev_fd = -1;
            run(x, y, (long)z, w);
            netdev_fd = saved;
        } else {
            die("unknown command");
        }
    }
    return 0;
}
