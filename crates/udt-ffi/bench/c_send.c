/* c_send: sends N bytes of the `udt perf` pattern (byte i = i mod 251) to a `udt perf server`
 * through the C API, then closes with linger (returns when everything is delivered). The
 * throughput benchmark (scripts/bench-c.sh) runs it beside `udt perf client` and the C++
 * drop-in; the receiver reports the figures. Usage: c_send HOST PORT BYTES */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <udt_c.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: c_send HOST PORT BYTES\n");
        return 64;
    }
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)atoi(argv[2]));
    if (inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) return 64;
    long long total = atoll(argv[3]);
    int u = udt_socket(AF_INET, SOCK_STREAM, 0);
    if (udt_connect(u, (struct sockaddr *)&a, sizeof a) != 0) {
        fprintf(stderr, "connect: %s\n", udt_getlasterror_desc());
        return 2;
    }
    /* 251 * 2000 bytes: a whole number of pattern periods, so every block is the same. */
    enum { BLOCK = 251 * 2000 };
    char *buf = malloc(BLOCK);
    for (int i = 0; i < BLOCK; i++) buf[i] = (char)(i % 251);
    long long sent = 0;
    while (sent < total) {
        long long off = sent % BLOCK;
        long long want = BLOCK - off;
        if (want > total - sent) want = total - sent;
        int n = udt_send(u, buf + off, (int)want, 0);
        if (n < 0) {
            fprintf(stderr, "send: %s\n", udt_getlasterror_desc());
            return 3;
        }
        sent += n;
    }
    free(buf);
    return udt_close(u) == 0 ? 0 : 3;
}
