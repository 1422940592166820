/* vmlab-seedrng: restores the random seed a system saves at shutdown, crediting it to the
 * kernel's pool (RNDADDENTROPY) as systemd-random-seed and seedrng do, so the pool is ready
 * before the first read of /dev/urandom. Without it Linux 6.1, with no other entropy
 * source on this machine, spins in try_to_generate_entropy at that read (mkfs.ext2's UUID):
 * about a second of kernel work. Usage: vmlab-seedrng [SEED_FILE]. */
#include <fcntl.h>
#include <linux/random.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/var/lib/seedrng/seed.credit";
    union {
        struct rand_pool_info info;
        char bytes[sizeof(struct rand_pool_info) + 512];
    } req;
    int in = open(path, O_RDONLY);
    if (in < 0) {
        perror(path);
        return 1;
    }
    ssize_t n = read(in, req.info.buf, 512);
    close(in);
    if (n < 32) {
        fprintf(stderr, "vmlab-seedrng: %s: need at least 32 bytes\n", path);
        return 1;
    }
    req.info.entropy_count = (int)n * 8;
    req.info.buf_size = (int)n;
    int fd = open("/dev/urandom", O_RDWR);
    if (fd < 0 || ioctl(fd, RNDADDENTROPY, &req) < 0) {
        perror("vmlab-seedrng: RNDADDENTROPY");
        return 1;
    }
    close(fd);
    return 0;
}
