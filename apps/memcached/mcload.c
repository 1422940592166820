/*
 * A small memcached load generator (memtier_benchmark is not packaged in Debian): over a Unix
 * socket, memcached's text protocol, requests pipelined DEPTH at a time. First it loads KEYS
 * keys of VALUE bytes (`set`, every key once, in a random order), then runs OPS requests at
 * uniformly random keys, GETS_PER_SET gets per set (memtier's default ratio is 1:10 set:get).
 * Every reply is read and checked; a miss or an error is an exit status 1.
 *
 * usage: mcload SOCKET KEYS VALUE OPS [DEPTH] [GETS_PER_SET]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int fd;
static char in[1 << 20];
static size_t have, used;

static void fail(const char *what)
{
    fprintf(stderr, "mcload: %s\n", what);
    exit(1);
}

static void send_all(const char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w <= 0) {
            fail("write to memcached failed");
        }
        p += w;
        len -= (size_t)w;
    }
}

/* Bytes available at in[used..have], reading more until at least `need`. */
static void fill(size_t need)
{
    if (have - used >= need) {
        return;
    }
    memmove(in, in + used, have - used);
    have -= used;
    used = 0;
    while (have < need) {
        ssize_t r = read(fd, in + have, sizeof in - have);
        if (r <= 0) {
            fail("memcached closed the connection");
        }
        have += (size_t)r;
    }
}

/* One line of reply (without \r\n), NUL-terminated in place. */
static char *line(void)
{
    for (;;) {
        char *end = memmem(in + used, have - used, "\r\n", 2);
        if (end) {
            *end = 0;
            char *start = in + used;
            used = (size_t)(end + 2 - in);
            return start;
        }
        fill(have - used + 1);
    }
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: mcload SOCKET KEYS VALUE OPS [DEPTH] [GETS_PER_SET]\n");
        return 2;
    }
    long keys = atol(argv[2]), value = atol(argv[3]), ops = atol(argv[4]);
    long depth = argc > 5 ? atol(argv[5]) : 16, gets = argc > 6 ? atol(argv[6]) : 10;
    if (keys < 1 || value < 1 || value > 65536 || ops < 0 || depth < 1) {
        fprintf(stderr, "mcload: bad arguments\n");
        return 2;
    }
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", argv[1]);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        fail("cannot connect to the socket");
    }
    char *payload = malloc(value);
    for (long i = 0; i < value; i++) {
        payload[i] = (char)('a' + i % 26);
    }
    size_t cap = (size_t)depth * (size_t)(value + 128);
    char *out = malloc(cap);
    /* The load: keys in a random order (a permutation), pipelined sets. */
    long *order = malloc(keys * sizeof *order);
    for (long i = 0; i < keys; i++) {
        order[i] = i;
    }
    for (long i = keys - 1; i > 0; i--) {
        long j = (long)(next() % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    long total = keys + ops, done = 0, misses = 0;
    while (done < total) {
        size_t len = 0;
        long batch = total - done < depth ? total - done : depth;
        char kinds[4096];
        for (long b = 0; b < batch; b++) {
            long i = done + b, key;
            int set;
            if (i < keys) {
                key = order[i];
                set = 1;
            } else {
                key = (long)(next() % (uint64_t)keys);
                set = next() % (uint64_t)(gets + 1) == 0;
            }
            kinds[b % sizeof kinds] = (char)set;
            if (set) {
                len += (size_t)sprintf(out + len, "set key:%012ld 0 0 %ld\r\n", key, value);
                memcpy(out + len, payload, value);
                len += (size_t)value;
                memcpy(out + len, "\r\n", 2);
                len += 2;
            } else {
                len += (size_t)sprintf(out + len, "get key:%012ld\r\n", key);
            }
        }
        send_all(out, len);
        for (long b = 0; b < batch; b++) {
            char *l = line();
            if (kinds[b % sizeof kinds]) {
                if (strcmp(l, "STORED") != 0) {
                    fprintf(stderr, "mcload: set answered '%s'\n", l);
                    return 1;
                }
            } else if (strncmp(l, "VALUE ", 6) == 0) {
                long n = atol(strrchr(l, ' ') + 1);
                fill((size_t)n + 2);
                used += (size_t)n + 2;
                if (strcmp(line(), "END") != 0) {
                    fail("get: no END after the value");
                }
            } else if (strcmp(l, "END") == 0) {
                misses++;
            } else {
                fprintf(stderr, "mcload: get answered '%s'\n", l);
                return 1;
            }
        }
        done += batch;
    }
    printf("mcload: %ld keys of %ld bytes loaded, %ld requests, %ld misses\n", keys, value, ops,
           misses);
    return misses > 0;
}
