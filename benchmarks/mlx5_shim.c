/* An mlx5-sized driver under veth names, for bench_instrument: loaded with LD_PRELOAD, it answers the SIOCETHTOOL
 * requests the agent makes (ETHTOOL_GSSET_INFO, ETHTOOL_GSTRINGS and ETHTOOL_GSTATS) for the interfaces named in
 * MLX5_SHIM_IFACES, from the string set in MLX5_SHIM_NAMES (32 bytes a name) and the readings made ahead in
 * MLX5_SHIM_READINGS (8 bytes a value, one reading after another, given in turn as the driver's copy would be).
 * Every other ioctl goes to libc. Both the Python agent (fcntl.ioctl) and its compiled reader call libc's ioctl,
 * so both read the same sets the same way; the kernel's own cost for a real mlx5 (the driver filling its
 * counters) is not in it.
 *     cc -O2 -shared -fPIC -o mlx5_shim.so mlx5_shim.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int (*real_ioctl)(int, unsigned long, ...);
static char *names, *ifaces;
static unsigned char *readings;
static uint32_t count;
static long nreadings, next_reading;

static void *load(const char *variable, long *size) {
    const char *path = getenv(variable);
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    rewind(f);
    void *data = malloc((size_t)*size + 1);
    if (data && fread(data, 1, (size_t)*size, f) != (size_t)*size) data = NULL;
    fclose(f);
    return data;
}

__attribute__((constructor)) static void init(void) {
    real_ioctl = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
    long names_size = 0, readings_size = 0;
    names = load("MLX5_SHIM_NAMES", &names_size);
    readings = load("MLX5_SHIM_READINGS", &readings_size);
    const char *listed = getenv("MLX5_SHIM_IFACES");
    if (!names || !readings || !listed || names_size < 32) return;
    count = (uint32_t)(names_size / 32);
    nreadings = readings_size / (8L * count);
    size_t n = strlen(listed);
    ifaces = malloc(n + 3); /* ",a,b," so that ",name," finds one whole name */
    if (ifaces) snprintf(ifaces, n + 3, ",%s,", listed);
}

static int shimmed(const struct ifreq *ifr) {
    char wanted[IFNAMSIZ + 3];
    if (!ifaces || !nreadings) return 0;
    snprintf(wanted, sizeof wanted, ",%.*s,", IFNAMSIZ, ifr->ifr_name);
    return strstr(ifaces, wanted) != NULL;
}

int ioctl(int fd, unsigned long request, ...) {
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (request == 0x8946 && arg && shimmed(arg)) {
        unsigned char *cmd = (unsigned char *)((struct ifreq *)arg)->ifr_data;
        uint32_t which;
        memcpy(&which, cmd, 4);
        if (which == 0x37) { /* GSSET_INFO: cmd, reserved, sset_mask, data[] */
            uint64_t mask = 1u << 1;
            memcpy(cmd + 8, &mask, 8);
            memcpy(cmd + 16, &count, 4);
            return 0;
        }
        if (which == 0x1b) { /* GSTRINGS: cmd, string_set, len, data[] */
            memcpy(cmd + 8, &count, 4);
            memcpy(cmd + 12, names, (size_t)count * 32);
            return 0;
        }
        if (which == 0x1d) { /* GSTATS: cmd, n_stats, data[] */
            memcpy(cmd + 4, &count, 4);
            memcpy(cmd + 8, readings + (size_t)next_reading * count * 8, (size_t)count * 8);
            next_reading = (next_reading + 1) % nreadings;
            return 0;
        }
    }
    return real_ioctl(fd, request, arg);
}
