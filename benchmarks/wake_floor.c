/* The floor under a sampler woken 100 times a second, in C: the wake-up alone (mode 0); plus a pread of
 * /proc/net/dev split into tokens (mode 1); plus a JSON line of the tokens' digits under netdev key names,
 * written five lines at a time (mode 2), about the agent's line for 8 interfaces. Prints CPU us per tick.
 * Built and run by bench_wake_floor.py:  wake_floor TICKS MODE INTERVAL_NS */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double cpu_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static const char *KEYS[] = {"rx_bytes", "rx_packets", "rx_errors", "rx_dropped", "rx_fifo_errors",
                             "rx_frame_errors", "tx_bytes", "tx_packets", "tx_errors", "tx_dropped",
                             "tx_fifo_errors", "tx_carrier_errors"};

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    int ticks = atoi(argv[1]), mode = atoi(argv[2]);
    long interval = atol(argv[3]);
    int fd = open("/proc/net/dev", O_RDONLY), out = open("/dev/null", O_WRONLY);
    if (fd < 0 || out < 0) return 1;
    static char buf[65536], lines[65536];
    char *tok[4096];
    size_t held = 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    double c0 = cpu_us();
    for (int i = 0; i < ticks; i++) {
        if (mode > 0) {
            ssize_t r = pread(fd, buf, sizeof buf - 1, 0);
            if (r < 0) return 1;
            buf[r] = 0;
            int nt = 0;
            for (char *p = buf; *p && nt < 4096;) {
                while (*p == ' ' || *p == '\n') p++;
                if (!*p) break;
                tok[nt++] = p;
                while (*p && *p != ' ' && *p != '\n') p++;
                if (*p) *p++ = 0;
            }
            if (mode > 1) {
                struct timespec now;
                clock_gettime(CLOCK_REALTIME, &now);
                char *l = lines + held, *end = lines + sizeof lines - 4096;
                l += sprintf(l, "{\"node\":\"n\",\"t\":%.6f,\"ifaces\":{", now.tv_sec + now.tv_nsec / 1e9);
                int iface = 0;
                for (int k = 0; k < nt && l < end; k++) {
                    size_t n = strlen(tok[k]);
                    if (n < 2 || tok[k][n - 1] != ':' || k + 16 >= nt) continue;
                    l += sprintf(l, "%s\"%.*s\":{\"stats\":{},\"netdev\":{", iface++ ? "," : "", (int)n - 1, tok[k]);
                    static const int kept[] = {0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 14};
                    for (int f = 0; f < 12; f++)
                        l += sprintf(l, "%s\"%s\":%s", f ? "," : "", KEYS[f], tok[k + 1 + kept[f]]);
                    l += sprintf(l, "},\"rdma\":{},\"pci\":null,\"speed_mbps\":10000}");
                }
                l += sprintf(l, "},\"cpu\":[],\"missing\":[],\"renamed\":{}}\n");
                held = l - lines;
                if (i % 5 == 4) {
                    if (write(out, lines, held) < 0) return 1;
                    held = 0;
                }
            }
        }
        next.tv_nsec += interval;
        while (next.tv_nsec >= 1000000000) {
            next.tv_nsec -= 1000000000;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    printf("%.2f\n", (cpu_us() - c0) / ticks);
    return 0;
}
