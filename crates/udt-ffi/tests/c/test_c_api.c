/*
 * Tests of the C API (udt_c.h): every function, its error paths and bad handles, on
 * loopback. Prints one line per check and ends with "N passed, M failed"; exits 1 on any
 * failure. Built and run (under valgrind) by scripts/test-c.sh.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <udt_c.h>

static int passed, failed;

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (cond) {                                                                       \
            passed++;                                                                     \
        } else {                                                                          \
            failed++;                                                                     \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            printf(__VA_ARGS__);                                                          \
            printf(" [last error %d: %s]\n", udt_getlasterror_code(), udt_getlasterror_desc()); \
        }                                                                                 \
    } while (0)

/* A call that must fail with `code`. */
#define FAILS_WITH(call, code, what)                                                      \
    do {                                                                                  \
        udt_clearlasterror();                                                             \
        long long rc_ = (long long)(call);                                                \
        CHECK(rc_ == -1 && udt_getlasterror_code() == (code), "%s: rc %lld, want error %d", \
              what, rc_, (int)(code));                                                    \
    } while (0)

static struct sockaddr_in loopback(int port) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int port_of(int u) {
    struct sockaddr_in a;
    int len = sizeof a;
    if (udt_getsockname(u, (struct sockaddr *)&a, &len) != 0) return -1;
    return ntohs(a.sin_port);
}

/* A listening socket of `type` on 127.0.0.1 with an ephemeral port. */
static int listener(int type, int *port) {
    int l = udt_socket(AF_INET, type, 0);
    struct sockaddr_in a = loopback(0);
    if (l < 0 || udt_bind(l, (struct sockaddr *)&a, sizeof a) != 0 || udt_listen(l, 8) != 0) return -1;
    *port = port_of(l);
    return l;
}

/* A connected pair (client, accepted) of `type`. */
static int pair(int type, int *client, int *server) {
    int port = 0;
    int l = listener(type, &port);
    if (l < 0) return -1;
    int c = udt_socket(AF_INET, type, 0);
    struct sockaddr_in a = loopback(port);
    if (udt_connect(c, (struct sockaddr *)&a, sizeof a) != 0) return -1;
    struct sockaddr_in peer;
    int plen = sizeof peer;
    int s = udt_accept(l, (struct sockaddr *)&peer, &plen);
    if (s < 0) return -1;
    if (plen != (int)sizeof peer || peer.sin_family != AF_INET || ntohs(peer.sin_port) != port_of(c))
        return -1;
    udt_close(l);
    *client = c;
    *server = s;
    return 0;
}

static unsigned char pattern_byte(long long i) { return (unsigned char)(i % 251); }

static void test_bad_handles(void) {
    const int bogus = 123456789;
    char buf[16] = {0};
    struct sockaddr_in a = loopback(9);
    int len = sizeof a;
    int v = 0, vlen = sizeof v;
    int64_t off = 0;
    udt_traceinfo t;
    FAILS_WITH(udt_bind(bogus, (struct sockaddr *)&a, sizeof a), UDT_EINVSOCK, "bind bad handle");
    FAILS_WITH(udt_bind2(bogus, 0), UDT_EINVSOCK, "bind2 bad handle");
    FAILS_WITH(udt_listen(bogus, 5), UDT_EINVSOCK, "listen bad handle");
    FAILS_WITH(udt_accept(bogus, NULL, NULL), UDT_EINVSOCK, "accept bad handle");
    FAILS_WITH(udt_connect(bogus, (struct sockaddr *)&a, sizeof a), UDT_EINVSOCK, "connect bad handle");
    FAILS_WITH(udt_close(bogus), UDT_EINVSOCK, "close bad handle");
    FAILS_WITH(udt_close(-1), UDT_EINVSOCK, "close -1");
    FAILS_WITH(udt_getpeername(bogus, (struct sockaddr *)&a, &len), UDT_EINVSOCK, "getpeername bad handle");
    FAILS_WITH(udt_getsockname(bogus, (struct sockaddr *)&a, &len), UDT_EINVSOCK, "getsockname bad handle");
    FAILS_WITH(udt_getsockopt(bogus, 0, UDT_MSS, &v, &vlen), UDT_EINVSOCK, "getsockopt bad handle");
    FAILS_WITH(udt_setsockopt(bogus, 0, UDT_MSS, &v, sizeof v), UDT_EINVSOCK, "setsockopt bad handle");
    FAILS_WITH(udt_send(bogus, buf, 4, 0), UDT_EINVSOCK, "send bad handle");
    FAILS_WITH(udt_recv(bogus, buf, 4, 0), UDT_EINVSOCK, "recv bad handle");
    FAILS_WITH(udt_sendmsg(bogus, buf, 4, -1, 0), UDT_EINVSOCK, "sendmsg bad handle");
    FAILS_WITH(udt_recvmsg(bogus, buf, 4), UDT_EINVSOCK, "recvmsg bad handle");
    FAILS_WITH(udt_sendfile(bogus, 0, &off, 1, 0), UDT_EINVSOCK, "sendfile bad handle");
    FAILS_WITH(udt_recvfile(bogus, 1, &off, 1, 0), UDT_EINVSOCK, "recvfile bad handle");
    FAILS_WITH(udt_sendfile2(bogus, "/dev/null", &off, 1, 0), UDT_EINVSOCK, "sendfile2 bad handle");
    FAILS_WITH(udt_recvfile2(bogus, "/dev/null", &off, 1, 0), UDT_EINVSOCK, "recvfile2 bad handle");
    FAILS_WITH(udt_perfmon(bogus, &t, 1), UDT_EINVSOCK, "perfmon bad handle");
    CHECK(udt_getsockstate(bogus) == UDT_STATUS_NONEXIST, "getsockstate of a bad handle is NONEXIST");
    FAILS_WITH(udt_epoll_add_usock(bogus, 1, NULL), UDT_EINVPOLLID, "epoll_add_usock bad eid");
    FAILS_WITH(udt_epoll_add_ssock(bogus, 0, NULL), UDT_EINVPOLLID, "epoll_add_ssock bad eid");
    FAILS_WITH(udt_epoll_remove_usock(bogus, 1), UDT_EINVPOLLID, "epoll_remove_usock bad eid");
    FAILS_WITH(udt_epoll_remove_ssock(bogus, 0), UDT_EINVPOLLID, "epoll_remove_ssock bad eid");
    FAILS_WITH(udt_epoll_release(bogus), UDT_EINVPOLLID, "epoll_release bad eid");
    FAILS_WITH(udt_epoll_size(bogus), UDT_EINVPOLLID, "epoll_size bad eid");
    int r[4], rn = 4;
    FAILS_WITH(udt_epoll_wait(bogus, r, &rn, NULL, NULL, 0, NULL, NULL, NULL, NULL), UDT_EINVPOLLID,
               "epoll_wait bad eid");
}

static void test_socket_args(void) {
    FAILS_WITH(udt_socket(AF_UNIX, SOCK_STREAM, 0), UDT_EINVPARAM, "socket AF_UNIX");
    FAILS_WITH(udt_socket(AF_INET, SOCK_RAW, 0), UDT_EINVPARAM, "socket SOCK_RAW");
    CHECK(strlen(udt_getlasterror_desc()) > 0, "error description is not empty");
    udt_clearlasterror();
    CHECK(udt_getlasterror_code() == UDT_SUCCESS, "clearlasterror resets the code");
    CHECK(udt_getlasterror_errno() == 0, "clearlasterror resets errno");

    int u = udt_socket(AF_INET, SOCK_STREAM, 0);
    CHECK(u >= 0, "socket");
    CHECK(udt_getsockstate(u) == UDT_STATUS_INIT, "new socket is INIT");
    struct sockaddr_in a = loopback(0);
    struct sockaddr_in6 a6;
    memset(&a6, 0, sizeof a6);
    a6.sin6_family = AF_INET6;
    FAILS_WITH(udt_bind(u, NULL, sizeof a), UDT_EINVPARAM, "bind null address");
    FAILS_WITH(udt_bind(u, (struct sockaddr *)&a, 3), UDT_EINVPARAM, "bind short length");
    FAILS_WITH(udt_bind(u, (struct sockaddr *)&a, -5), UDT_EINVPARAM, "bind negative length");
    FAILS_WITH(udt_bind(u, (struct sockaddr *)&a6, sizeof a6), UDT_EINVPARAM, "bind IPv6 address to IPv4 socket");
    struct sockaddr_in n;
    int nlen = sizeof n;
    FAILS_WITH(udt_getsockname(u, (struct sockaddr *)&n, &nlen), UDT_EUNBOUNDSOCK, "getsockname before bind");
    FAILS_WITH(udt_listen(u, 5), UDT_EUNBOUNDSOCK, "listen before bind");
    FAILS_WITH(udt_accept(u, NULL, NULL), UDT_ENOLISTEN, "accept before listen");
    char b[4];
    FAILS_WITH(udt_send(u, b, 4, 0), UDT_ENOCONN, "send before connect");
    FAILS_WITH(udt_recv(u, b, 4, 0), UDT_ENOCONN, "recv before connect");
    CHECK(udt_bind(u, (struct sockaddr *)&a, sizeof a) == 0, "bind");
    CHECK(udt_getsockstate(u) == UDT_STATUS_OPENED, "bound socket is OPENED");
    FAILS_WITH(udt_bind(u, (struct sockaddr *)&a, sizeof a), UDT_EBOUNDSOCK, "bind twice");
    int small = 2;
    FAILS_WITH(udt_getsockname(u, (struct sockaddr *)&n, NULL), UDT_EINVPARAM, "getsockname null length");
    CHECK(udt_getsockname(u, (struct sockaddr *)&n, &small) == 0 && small == (int)sizeof n,
          "getsockname with a short buffer reports the full length");
    nlen = sizeof n;
    CHECK(udt_getsockname(u, (struct sockaddr *)&n, &nlen) == 0 && n.sin_port != 0, "getsockname");
    FAILS_WITH(udt_getpeername(u, (struct sockaddr *)&n, &nlen), UDT_ENOCONN, "getpeername unconnected");
    CHECK(udt_close(u) == 0, "close");
    FAILS_WITH(udt_close(u), UDT_EINVSOCK, "close twice");
    CHECK(udt_getsockstate(u) == UDT_STATUS_NONEXIST, "closed handle is NONEXIST");
}

static void test_bind2(void) {
    int u = udt_socket(AF_INET, SOCK_STREAM, 0);
    int p[2];
    CHECK(pipe(p) == 0, "pipe");
    FAILS_WITH(udt_bind2(u, p[0]), UDT_EINVPARAM, "bind2 with a pipe");
    CHECK(fcntl(p[0], F_GETFD) >= 0, "bind2 left the refused descriptor open");
    close(p[0]);
    close(p[1]);
    int tcp = socket(AF_INET, SOCK_STREAM, 0);
    FAILS_WITH(udt_bind2(u, tcp), UDT_EINVPARAM, "bind2 with a TCP socket");
    close(tcp);
    FAILS_WITH(udt_bind2(u, -3), UDT_EINVPARAM, "bind2 with -3");
    int udp = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = loopback(0);
    CHECK(bind(udp, (struct sockaddr *)&a, sizeof a) == 0, "bind UDP socket");
    struct sockaddr_in k;
    socklen_t klen = sizeof k;
    getsockname(udp, (struct sockaddr *)&k, &klen);
    int udp6 = socket(AF_INET6, SOCK_DGRAM, 0);
    if (udp6 >= 0) {
        FAILS_WITH(udt_bind2(u, udp6), UDT_EINVPARAM, "bind2 with an IPv6 UDP socket on an IPv4 socket");
        CHECK(fcntl(udp6, F_GETFD) >= 0, "bind2 left the refused IPv6 socket open");
        close(udp6);
    }
    CHECK(udt_bind2(u, udp) == 0, "bind2 with a UDP socket");
    int udp2 = socket(AF_INET, SOCK_DGRAM, 0);
    FAILS_WITH(udt_bind2(u, udp2), UDT_EBOUNDSOCK, "bind2 on a bound socket");
    CHECK(fcntl(udp2, F_GETFD) >= 0, "bind2 left the descriptor of a bound socket open");
    close(udp2);
    CHECK(port_of(u) == ntohs(k.sin_port), "bind2 uses the UDP socket's port");
    CHECK(udt_listen(u, 4) == 0, "listen on a bind2 socket");
    int c = udt_socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = loopback(ntohs(k.sin_port));
    CHECK(udt_connect(c, (struct sockaddr *)&to, sizeof to) == 0, "connect to a bind2 listener");
    int s = udt_accept(u, NULL, NULL);
    CHECK(s >= 0, "accept with null address");
    udt_close(c);
    udt_close(s);
    udt_close(u);
}

static void test_options(void) {
    int u = udt_socket(AF_INET, SOCK_STREAM, 0);
    int v = 0, len = sizeof v;
    CHECK(udt_getsockopt(u, 0, UDT_MSS, &v, &len) == 0 && v == 1500 && len == 4, "default MSS is 1500 (got %d)", v);
    v = 1400;
    CHECK(udt_setsockopt(u, 0, UDT_MSS, &v, sizeof v) == 0, "set MSS");
    len = sizeof v;
    CHECK(udt_getsockopt(u, 0, UDT_MSS, &v, &len) == 0 && v == 1400, "MSS reads back");
    v = 10;
    FAILS_WITH(udt_setsockopt(u, 0, UDT_MSS, &v, sizeof v), UDT_EINVPARAM, "MSS too small");
    FAILS_WITH(udt_setsockopt(u, 0, UDT_MSS, NULL, 4), UDT_EINVPARAM, "null option value");
    FAILS_WITH(udt_setsockopt(u, 0, UDT_MSS, &v, 2), UDT_EINVPARAM, "short option value");
    FAILS_WITH(udt_setsockopt(u, 0, 99, &v, sizeof v), UDT_EINVPARAM, "unknown option");
    FAILS_WITH(udt_setsockopt(u, 0, -1, &v, sizeof v), UDT_EINVPARAM, "negative option");
    FAILS_WITH(udt_setsockopt(u, 0, UDT_STATE, &v, sizeof v), UDT_EINVOP, "set a read-only option");
    FAILS_WITH(udt_setsockopt(u, 0, UDT_MAXMSG, &v, sizeof v), UDT_EINVOP, "UDT_MAXMSG is not implemented");
    FAILS_WITH(udt_getsockopt(u, 0, UDT_MSS, &v, NULL), UDT_EINVPARAM, "getsockopt null length");
    len = 2;
    FAILS_WITH(udt_getsockopt(u, 0, UDT_MSS, &v, &len), UDT_EINVPARAM, "getsockopt short buffer");

    bool on = false;
    CHECK(udt_setsockopt(u, 0, UDT_SNDSYN, &on, sizeof on) == 0, "set SNDSYN as bool");
    len = sizeof on;
    on = true;
    CHECK(udt_getsockopt(u, 0, UDT_SNDSYN, &on, &len) == 0 && !on && len == 1, "SNDSYN reads back as a 1-byte bool");
    v = 1;
    CHECK(udt_setsockopt(u, 0, UDT_SNDSYN, &v, sizeof v) == 0, "set SNDSYN as int");

    struct linger lg = {1, 7};
    CHECK(udt_setsockopt(u, 0, UDT_LINGER, &lg, sizeof lg) == 0, "set LINGER");
    memset(&lg, 0, sizeof lg);
    len = sizeof lg;
    CHECK(udt_getsockopt(u, 0, UDT_LINGER, &lg, &len) == 0 && lg.l_onoff == 1 && lg.l_linger == 7, "LINGER reads back");
    FAILS_WITH(udt_setsockopt(u, 0, UDT_LINGER, &v, sizeof v), UDT_EINVPARAM, "LINGER with an int");

    int64_t bw = 12500000;
    CHECK(udt_setsockopt(u, 0, UDT_MAXBW, &bw, sizeof bw) == 0, "set MAXBW");
    bw = 0;
    len = sizeof bw;
    CHECK(udt_getsockopt(u, 0, UDT_MAXBW, &bw, &len) == 0 && bw == 12500000 && len == 8, "MAXBW reads back");

    CHECK(udt_setsockopt(u, 0, UDT_CC, "bic", 3) == 0, "set CC by name");
    char name[32];
    len = sizeof name;
    CHECK(udt_getsockopt(u, 0, UDT_CC, name, &len) == 0 && strcmp(name, "bic") == 0, "CC reads back (%s)", name);
    FAILS_WITH(udt_setsockopt(u, 0, UDT_CC, "no-such-cc", 10), UDT_EINVPARAM, "unknown CC");

    v = 100;
    CHECK(udt_setsockopt(u, 0, UDT_RCVTIMEO, &v, sizeof v) == 0, "set RCVTIMEO");
    len = sizeof v;
    CHECK(udt_getsockopt(u, 0, UDT_RCVTIMEO, &v, &len) == 0 && v == 100, "RCVTIMEO reads back");
    len = sizeof v;
    CHECK(udt_getsockopt(u, 0, UDT_STATE, &v, &len) == 0 && v == UDT_STATUS_INIT, "STATE is INIT");
    len = sizeof v;
    CHECK(udt_getsockopt(u, 0, UDT_EVENT, &v, &len) == 0 && v == 0, "EVENT of a new socket is 0");

    struct sockaddr_in a = loopback(0);
    udt_bind(u, (struct sockaddr *)&a, sizeof a);
    v = 1400;
    FAILS_WITH(udt_setsockopt(u, 0, UDT_MSS, &v, sizeof v), UDT_EBOUNDSOCK, "MSS after bind");
    udt_close(u);
    FAILS_WITH(udt_getsockopt(u, 0, UDT_MSS, &v, &len), UDT_EINVSOCK, "getsockopt after close");
}

static void test_stream(void) {
    int c, s;
    CHECK(pair(SOCK_STREAM, &c, &s) == 0, "stream pair");
    CHECK(udt_getsockstate(c) == UDT_STATUS_CONNECTED, "client is CONNECTED");
    struct sockaddr_in p;
    int plen = sizeof p;
    CHECK(udt_getpeername(c, (struct sockaddr *)&p, &plen) == 0 && ntohs(p.sin_port) == port_of(s), "getpeername");
    FAILS_WITH(udt_sendmsg(c, "x", 1, -1, 0), UDT_ESTREAMILL, "sendmsg on a stream socket");
    char tiny[4];
    FAILS_WITH(udt_recvmsg(c, tiny, 4), UDT_ESTREAMILL, "recvmsg on a stream socket");
    FAILS_WITH(udt_send(c, NULL, 10, 0), UDT_EINVPARAM, "send null buffer");
    FAILS_WITH(udt_send(c, tiny, -1, 0), UDT_EINVPARAM, "send negative length");
    FAILS_WITH(udt_recv(s, NULL, 10, 0), UDT_EINVPARAM, "recv null buffer");

    const long long total = 4 << 20;
    char *out = malloc((size_t)total), *in = malloc((size_t)total);
    for (long long i = 0; i < total; i++) out[i] = (char)pattern_byte(i);
    long long sent = 0, got = 0;
    while (sent < total) {
        int n = udt_send(c, out + sent, (int)(total - sent > 100000 ? 100000 : total - sent), 0);
        if (n <= 0) break;
        sent += n;
        /* Drain as we go so the buffers never fill (one thread). */
        while (got < sent) {
            int m = udt_recv(s, in + got, (int)(total - got), 0);
            if (m <= 0) break;
            got += m;
        }
    }
    CHECK(sent == total && got == total, "stream transfer of 4 MiB (sent %lld, got %lld)", sent, got);
    CHECK(memcmp(in, out, (size_t)total) == 0, "stream bytes match");

    udt_traceinfo t;
    memset(&t, 0, sizeof t);
    CHECK(udt_perfmon(c, &t, 1) == 0 && t.pktSentTotal > 0 && t.msRTT >= 0, "perfmon counts sent packets (%lld)",
          (long long)t.pktSentTotal);
    FAILS_WITH(udt_perfmon(c, NULL, 0), UDT_EINVPARAM, "perfmon null");

    /* Receive timeout and non-blocking receive. */
    int ms = 50;
    udt_setsockopt(s, 0, UDT_RCVTIMEO, &ms, sizeof ms);
    char b[16];
    FAILS_WITH(udt_recv(s, b, sizeof b, 0), UDT_ETIMEOUT, "recv times out");
    bool off = false;
    udt_setsockopt(s, 0, UDT_RCVSYN, &off, sizeof off);
    FAILS_WITH(udt_recv(s, b, sizeof b, 0), UDT_EASYNCRCV, "non-blocking recv with nothing to read");
    bool on = true;
    udt_setsockopt(s, 0, UDT_RCVSYN, &on, sizeof on);
    ms = -1;
    udt_setsockopt(s, 0, UDT_RCVTIMEO, &ms, sizeof ms);

    /* End of stream: the peer closes, the reader gets its data then ECONNLOST. */
    CHECK(udt_send(c, "bye", 3, 0) == 3, "send before close");
    CHECK(udt_close(c) == 0, "close client");
    CHECK(udt_recv(s, b, sizeof b, 0) == 3 && memcmp(b, "bye", 3) == 0, "data sent before close arrives");
    FAILS_WITH(udt_recv(s, b, sizeof b, 0), UDT_ECONNLOST, "recv after the peer closed");
    int st = udt_getsockstate(s);
    CHECK(st == UDT_STATUS_BROKEN || st == UDT_STATUS_CLOSED, "server sees the connection end (state %d)", st);
    udt_close(s);
    free(out);
    free(in);
}

static void test_messages(void) {
    int c, s;
    CHECK(pair(SOCK_DGRAM, &c, &s) == 0, "message pair");
    FAILS_WITH(udt_send(c, "x", 1, 0), UDT_EDGRAMILL, "send on a message socket");
    char buf[5000];
    int ok = 1;
    for (int i = 1; i <= 50; i++) {
        int len = (i * 97) % 4000 + 1;
        memset(buf, i, (size_t)len);
        if (udt_sendmsg(c, buf, len, -1, 1) != len) ok = 0;
    }
    CHECK(ok, "sendmsg returns each message's length");
    ok = 1;
    for (int i = 1; i <= 50; i++) {
        int want = (i * 97) % 4000 + 1;
        int n = udt_recvmsg(s, buf, sizeof buf);
        if (n != want || (unsigned char)buf[0] != (unsigned char)i || (unsigned char)buf[n - 1] != (unsigned char)i)
            ok = 0;
    }
    CHECK(ok, "recvmsg keeps message boundaries");
    memset(buf, 7, 3000);
    CHECK(udt_sendmsg(c, buf, 3000, 1000, 0) == 3000, "sendmsg with a TTL");
    char small[100];
    CHECK(udt_recvmsg(s, small, sizeof small) == 100, "a message longer than the buffer is cut");
    FAILS_WITH(udt_sendmsg(c, buf, 0, -1, 0), UDT_EINVPARAM, "empty message");
    FAILS_WITH(udt_recvmsg(s, small, 0), UDT_EINVPARAM, "recvmsg zero length");
    udt_close(c);
    udt_close(s);
}

static void test_files(void) {
    int c, s;
    CHECK(pair(SOCK_STREAM, &c, &s) == 0, "file pair");
    char src[] = "/tmp/udt_c_test_srcXXXXXX";
    int fd = mkstemp(src);
    const int size = 3 * 1000 * 1000 + 17;
    unsigned char *data = malloc((size_t)size);
    for (int i = 0; i < size; i++) data[i] = pattern_byte(i * 7 + 3);
    CHECK(write(fd, data, (size_t)size) == size, "write source file");
    char dst[] = "/tmp/udt_c_test_dstXXXXXX";
    int dfd = mkstemp(dst);
    close(dfd);

    int64_t off = 0;
    CHECK(udt_sendfile(c, fd, &off, size, 364000) == size && off == size, "sendfile by fd (offset %lld)", (long long)off);
    int64_t roff = 0;
    CHECK(udt_recvfile2(s, dst, &roff, size, 7280000) == size && roff == size, "recvfile2 by path");
    struct stat stt;
    CHECK(stat(dst, &stt) == 0 && stt.st_size == size, "received file has the size");
    int rfd = open(dst, O_RDONLY);
    unsigned char *back = malloc((size_t)size);
    CHECK(read(rfd, back, (size_t)size) == size && memcmp(back, data, (size_t)size) == 0, "received file matches");
    close(rfd);

    /* The other way, by path then by fd, from an offset. */
    off = 1000;
    CHECK(udt_sendfile2(s, src, &off, 5000, 0) == 5000 && off == 6000, "sendfile2 from an offset");
    int out = open(dst, O_RDWR | O_TRUNC);
    roff = 0;
    CHECK(udt_recvfile(c, out, &roff, 5000, 0) == 5000 && roff == 5000, "recvfile by fd");
    unsigned char part[5000];
    CHECK(pread(out, part, 5000, 0) == 5000 && memcmp(part, data + 1000, 5000) == 0, "file range matches");
    CHECK(fcntl(out, F_GETFD) >= 0, "recvfile leaves the caller's descriptor open");
    close(out);

    FAILS_WITH(udt_sendfile(c, -1, &off, 10, 0), UDT_EFILE, "sendfile bad fd");
    FAILS_WITH(udt_sendfile(c, fd, NULL, 10, 0), UDT_EINVPARAM, "sendfile null offset");
    off = -5;
    FAILS_WITH(udt_sendfile(c, fd, &off, 10, 0), UDT_EINVPARAM, "sendfile negative offset");
    off = 0;
    FAILS_WITH(udt_sendfile(c, fd, &off, -10, 0), UDT_EINVPARAM, "sendfile negative size");
    FAILS_WITH(udt_sendfile2(c, "/nonexistent/dir/file", &off, 10, 0), UDT_EFILE, "sendfile2 missing file");
    FAILS_WITH(udt_sendfile2(c, NULL, &off, 10, 0), UDT_EINVPARAM, "sendfile2 null path");
    close(fd);
    unlink(src);
    unlink(dst);
    free(data);
    free(back);
    udt_close(c);
    udt_close(s);
}

static void test_epoll(void) {
    int eid = udt_epoll_create();
    CHECK(eid >= 0, "epoll_create");
    int port = 0;
    int l = listener(SOCK_STREAM, &port);
    int in = UDT_EPOLL_IN;
    CHECK(udt_epoll_add_usock(eid, l, &in) == 0, "epoll_add_usock listener");
    int bad = 0x40;
    FAILS_WITH(udt_epoll_add_usock(eid, l, &bad), UDT_EINVPARAM, "epoll_add_usock bad events");
    FAILS_WITH(udt_epoll_add_usock(eid, 987654321, &in), UDT_EINVSOCK, "epoll_add_usock bad socket");
    CHECK(udt_epoll_size(eid) == 1, "epoll_size counts one socket");
    int r[8], rn = 8, w[8], wn = 8;
    FAILS_WITH(udt_epoll_wait(eid, r, &rn, w, &wn, 20, NULL, NULL, NULL, NULL), UDT_ETIMEOUT, "epoll_wait times out");
    FAILS_WITH(udt_epoll_wait(eid, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL), UDT_EINVPARAM,
               "epoll_wait with no output set");

    /* A non-blocking connect: the poller reports the client writable once connected. */
    int c = udt_socket(AF_INET, SOCK_STREAM, 0);
    bool off = false;
    udt_setsockopt(c, 0, UDT_RCVSYN, &off, sizeof off);
    int out = UDT_EPOLL_OUT;
    CHECK(udt_epoll_add_usock(eid, c, &out) == 0, "epoll_add_usock before connect");
    struct sockaddr_in a = loopback(port);
    CHECK(udt_connect(c, (struct sockaddr *)&a, sizeof a) == 0, "non-blocking connect returns at once");
    int saw_l = 0, saw_c = 0;
    for (int round = 0; round < 50 && !(saw_l && saw_c); round++) {
        rn = 8;
        wn = 8;
        int n = udt_epoll_wait(eid, r, &rn, w, &wn, 1000, NULL, NULL, NULL, NULL);
        if (n < 0) break;
        for (int i = 0; i < rn; i++) saw_l |= r[i] == l;
        for (int i = 0; i < wn; i++) saw_c |= w[i] == c;
        /* The listener stays readable until accept (level-triggered): stop watching it so
           the next waits sleep until the client connects. */
        if (saw_l) udt_epoll_remove_usock(eid, l);
    }
    CHECK(saw_l, "epoll reports the listener readable");
    CHECK(saw_c, "epoll reports the connecting socket writable");
    CHECK(udt_getsockstate(c) == UDT_STATUS_CONNECTED, "non-blocking connect completed");
    int s = udt_accept(l, NULL, NULL);
    CHECK(s >= 0, "accept after epoll");

    /* System sockets. */
    int p[2];
    CHECK(pipe(p) == 0, "pipe");
    CHECK(udt_epoll_add_ssock(eid, p[0], &in) == 0, "epoll_add_ssock");
    FAILS_WITH(udt_epoll_add_ssock(eid, -1, &in), UDT_EINVPARAM, "epoll_add_ssock -1");
    CHECK(udt_epoll_remove_usock(eid, c) == 0, "epoll_remove_usock");
    CHECK(udt_epoll_remove_usock(eid, l) == 0, "epoll_remove_usock of a removed socket is no error");
    int lr[4], lrn = 4;
    rn = 8;
    FAILS_WITH(udt_epoll_wait(eid, r, &rn, NULL, NULL, 10, lr, &lrn, NULL, NULL), UDT_ETIMEOUT,
               "nothing ready after removals");
    CHECK(write(p[1], "x", 1) == 1, "write to pipe");
    rn = 8;
    lrn = 4;
    int n = udt_epoll_wait(eid, r, &rn, NULL, NULL, 1000, lr, &lrn, NULL, NULL);
    CHECK(n == 1 && rn == 0 && lrn == 1 && lr[0] == p[0], "epoll reports the system socket (n %d)", n);
    CHECK(udt_epoll_remove_ssock(eid, p[0]) == 0, "epoll_remove_ssock");
    CHECK(udt_epoll_remove_ssock(eid, p[0]) == 0, "epoll_remove_ssock twice is no error");

    /* A UDT socket with data. */
    CHECK(udt_epoll_add_usock(eid, s, &in) == 0, "epoll_add_usock accepted socket");
    CHECK(udt_send(c, "ping", 4, 0) == 4, "send ping");
    rn = 8;
    n = udt_epoll_wait(eid, r, &rn, NULL, NULL, 2000, NULL, NULL, NULL, NULL);
    CHECK(n == 1 && r[0] == s, "epoll reports the socket with data");
    CHECK(udt_epoll_release(eid) == 0, "epoll_release");
    rn = 8;
    FAILS_WITH(udt_epoll_wait(eid, r, &rn, NULL, NULL, 0, NULL, NULL, NULL, NULL), UDT_EINVPOLLID,
               "epoll_wait after release");
    close(p[0]);
    close(p[1]);
    udt_close(c);
    udt_close(s);
    udt_close(l);
}

static void test_ipv6(void) {
    int l = udt_socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 a;
    memset(&a, 0, sizeof a);
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    if (udt_bind(l, (struct sockaddr *)&a, sizeof a) != 0) {
        printf("note: no IPv6 loopback here (%s); IPv6 checks skipped\n", udt_getlasterror_desc());
        udt_close(l);
        return;
    }
    CHECK(udt_listen(l, 4) == 0, "IPv6 listen");
    struct sockaddr_in6 got;
    int glen = sizeof got;
    CHECK(udt_getsockname(l, (struct sockaddr *)&got, &glen) == 0 && glen == (int)sizeof got, "IPv6 getsockname");
    int c = udt_socket(AF_INET6, SOCK_STREAM, 0);
    a.sin6_port = got.sin6_port;
    CHECK(udt_connect(c, (struct sockaddr *)&a, sizeof a) == 0, "IPv6 connect");
    struct sockaddr_in6 peer;
    int plen = sizeof peer;
    int s = udt_accept(l, (struct sockaddr *)&peer, &plen);
    CHECK(s >= 0 && peer.sin6_family == AF_INET6, "IPv6 accept");
    char b[8];
    CHECK(udt_send(c, "six", 3, 0) == 3 && udt_recv(s, b, 8, 0) == 3, "IPv6 data");
    udt_close(c);
    udt_close(s);
    udt_close(l);
}

struct worker {
    int c, s, ok;
};

static void *stream_worker(void *arg) {
    struct worker *w = arg;
    const int total = 1 << 20;
    char *buf = malloc(65536);
    long long sent = 0, got = 0;
    int ok = 1;
    while (sent < total && ok) {
        for (int i = 0; i < 65536; i++) buf[i] = (char)pattern_byte(sent + i);
        int n = udt_send(w->c, buf, 65536, 0);
        if (n <= 0) ok = 0; else sent += n == 65536 ? n : n;
        if (n > 0 && n < 65536) ok = 0; /* blocking send of 64 KiB into a larger buffer takes it all */
        while (ok && got < sent) {
            int m = udt_recv(w->s, buf, 65536, 0);
            if (m <= 0) { ok = 0; break; }
            for (int i = 0; i < m; i++)
                if ((unsigned char)buf[i] != pattern_byte(got + i)) ok = 0;
            got += m;
        }
    }
    w->ok = ok && got == total;
    free(buf);
    return NULL;
}

static void test_threads(void) {
    enum { N = 4 };
    struct worker w[N];
    pthread_t t[N];
    int ok = 1;
    for (int i = 0; i < N; i++) {
        if (pair(SOCK_STREAM, &w[i].c, &w[i].s) != 0) ok = 0;
        w[i].ok = 0;
    }
    CHECK(ok, "pairs for threads");
    for (int i = 0; i < N; i++) pthread_create(&t[i], NULL, stream_worker, &w[i]);
    for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
    int all = 1;
    for (int i = 0; i < N; i++) {
        all &= w[i].ok;
        udt_close(w[i].c);
        udt_close(w[i].s);
    }
    CHECK(all, "four threads move 1 MiB each, verified");
}

struct blocked {
    int s, rc, code;
};

static void *blocked_recv(void *arg) {
    struct blocked *b = arg;
    char buf[16];
    b->rc = udt_recv(b->s, buf, sizeof buf, 0);
    b->code = udt_getlasterror_code();
    return NULL;
}

static void test_close_unblocks(void) {
    int c, s;
    CHECK(pair(SOCK_STREAM, &c, &s) == 0, "pair for close-while-blocked");
    struct blocked b = {s, 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, blocked_recv, &b);
    usleep(100 * 1000);
    CHECK(udt_close(s) == 0, "close a socket another thread is blocked in");
    pthread_join(t, NULL);
    CHECK(b.rc == -1 && b.code != 0, "the blocked recv returns an error (%d)", b.code);
    udt_close(c);
}

static void test_cleanup(void) {
    int u = udt_socket(AF_INET, SOCK_STREAM, 0);
    int eid = udt_epoll_create();
    CHECK(udt_cleanup() == 0, "cleanup");
    CHECK(udt_getsockstate(u) == UDT_STATUS_NONEXIST, "cleanup closed the sockets");
    FAILS_WITH(udt_epoll_release(eid), UDT_EINVPOLLID, "cleanup released the pollers");
    CHECK(udt_startup() == 0, "startup after cleanup");
    int v = udt_socket(AF_INET, SOCK_DGRAM, 0);
    CHECK(v >= 0, "the library works after cleanup");
    udt_close(v);
}


/* ----- congestion control written in C (udt_setcc) ----- */

static int cc_creates, cc_destroys, cc_releases, cc_acks, cc_inits, cc_sent;

static void *cc_create(void *user) {
    (void)user;
    cc_creates++;
    return malloc(16);
}
static void cc_destroy(void *cc) {
    cc_destroys++;
    free(cc);
}
static void cc_release(void *user) { cc_releases += user == (void *)&cc_releases; }
static void cc_init(void *cc, udt_cc_ctx *ctx) {
    (void)cc;
    cc_inits++;
    ctx->pkt_snd_period_us = 60.0; /* 200 Mb/s at 1500-byte packets */
    ctx->cwnd = 1000.0;
    udt_cc_set_ack_interval(ctx, 8);
}
static void cc_on_ack(void *cc, udt_cc_ctx *ctx, int32_t ack) {
    (void)cc;
    (void)ack;
    if (ctx->mss == 1500 && ctx->rtt_us >= 0) cc_acks++;
}
static void cc_on_sent(void *cc, udt_cc_ctx *ctx, const udt_cc_packet *p) {
    (void)cc;
    (void)ctx;
    if (p->payload_len > 0) cc_sent++;
}

static void test_c_congestion_control(void) {
    udt_cc_ops ops;
    memset(&ops, 0, sizeof ops);
    ops.create = cc_create;
    ops.destroy = cc_destroy;
    ops.release = cc_release;
    ops.init = cc_init;
    ops.on_ack = cc_on_ack;
    ops.on_pkt_sent = cc_on_sent;
    FAILS_WITH(udt_setcc(987654321, &ops, &cc_releases, "c-rate"), UDT_EINVSOCK, "setcc bad handle");
    CHECK(cc_releases == 1, "a refused setcc releases the user pointer");
    cc_releases = 0;
    int u = udt_socket(AF_INET, SOCK_STREAM, 0);
    FAILS_WITH(udt_setcc(u, NULL, NULL, NULL), UDT_EINVPARAM, "setcc null ops");

    int port = 0;
    int l = listener(SOCK_STREAM, &port);
    CHECK(udt_setcc(u, &ops, &cc_releases, "c-rate") == 0, "setcc");
    char name[32];
    int nlen = sizeof name;
    CHECK(udt_getsockopt(u, 0, UDT_CC, name, &nlen) == 0 && strcmp(name, "c-rate") == 0, "UDT_CC names the C algorithm");
    struct sockaddr_in a = loopback(port);
    CHECK(udt_connect(u, (struct sockaddr *)&a, sizeof a) == 0, "connect with the C algorithm");
    int s = udt_accept(l, NULL, NULL);
    udt_close(l);
    static char buf[1 << 20];
    memset(buf, 3, sizeof buf);
    long long sent = 0, got = 0;
    while (sent < (long long)sizeof buf) {
        int n = udt_send(u, buf + sent, (int)(sizeof buf - sent), 0);
        if (n <= 0) break;
        sent += n;
        static char in[1 << 16];
        while (got < sent) {
            int m = udt_recv(s, in, sizeof in, 0);
            if (m <= 0) break;
            got += m;
        }
    }
    CHECK(got == (long long)sizeof buf, "1 MiB through the C algorithm");
    CHECK(cc_creates == 1 && cc_inits == 1, "create and init ran once (%d, %d)", cc_creates, cc_inits);
    CHECK(cc_acks > 0 && cc_sent > 0, "on_ack and on_pkt_sent ran (%d, %d)", cc_acks, cc_sent);
    udt_traceinfo t;
    CHECK(udt_perfmon(u, &t, 0) == 0 && t.usPktSndPeriod > 54.0 && t.usPktSndPeriod < 66.0,
          "the algorithm's period is in force (%.1f us)", t.usPktSndPeriod);
    udt_close(u);
    udt_close(s);
    for (int i = 0; i < 100 && !(cc_destroys == 1 && cc_releases == 1); i++) usleep(20 * 1000);
    CHECK(cc_destroys == 1, "destroy ran once the connection was gone (%d)", cc_destroys);
    CHECK(cc_releases == 1, "release ran once no socket used the algorithm (%d)", cc_releases);
}

/* Transport encryption (UDT_SECRET, UDT_ENCRYPTION, UDT_ENCRYPTED; docs/encryption.md). */
static int encrypted_listener(const char *secret, int mode, int *port) {
    int l = udt_socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0) return -1;
    if (udt_setsockopt(l, 0, UDT_ENCRYPTION, &mode, sizeof mode) != 0) return -1;
    if (secret && udt_setsockopt(l, 0, UDT_SECRET, secret, (int)strlen(secret)) != 0) return -1;
    struct sockaddr_in a = loopback(0);
    if (udt_bind(l, (struct sockaddr *)&a, sizeof a) != 0 || udt_listen(l, 8) != 0) return -1;
    *port = port_of(l);
    return l;
}

static int connect_with(const char *secret, int mode, int port) {
    int c = udt_socket(AF_INET, SOCK_STREAM, 0);
    udt_setsockopt(c, 0, UDT_ENCRYPTION, &mode, sizeof mode);
    if (secret) udt_setsockopt(c, 0, UDT_SECRET, secret, (int)strlen(secret));
    struct sockaddr_in a = loopback(port);
    if (udt_connect(c, (struct sockaddr *)&a, sizeof a) != 0) {
        udt_close(c);
        return -1;
    }
    return c;
}

static void test_encryption(void) {
    int u = udt_socket(AF_INET, SOCK_STREAM, 0);
    int v = -1, len = sizeof v;
    CHECK(udt_getsockopt(u, 0, UDT_ENCRYPTION, &v, &len) == 0 && v == 0, "encryption off by default (%d)", v);
    CHECK(udt_setsockopt(u, 0, UDT_SECRET, "k", 1) == 0, "set a secret");
    len = sizeof v;
    CHECK(udt_getsockopt(u, 0, UDT_ENCRYPTION, &v, &len) == 0 && v == 2, "a secret defaults to required (%d)", v);
    v = 1;
    CHECK(udt_setsockopt(u, 0, UDT_ENCRYPTION, &v, sizeof v) == 0, "set preferred");
    len = sizeof v;
    CHECK(udt_getsockopt(u, 0, UDT_ENCRYPTION, &v, &len) == 0 && v == 1, "preferred reads back (%d)", v);
    v = 3;
    FAILS_WITH(udt_setsockopt(u, 0, UDT_ENCRYPTION, &v, sizeof v), UDT_EINVPARAM, "mode 3");
    FAILS_WITH(udt_setsockopt(u, 0, UDT_ENCRYPTION, &v, 2), UDT_EINVPARAM, "short mode");
    FAILS_WITH(udt_setsockopt(u, 0, UDT_SECRET, NULL, 4), UDT_EINVPARAM, "null secret");
    FAILS_WITH(udt_getsockopt(u, 0, UDT_SECRET, &v, &len), UDT_EINVOP, "the secret is write only");
    FAILS_WITH(udt_setsockopt(u, 0, UDT_ENCRYPTED, &v, sizeof v), UDT_EINVOP, "ENCRYPTED is read only");
    CHECK(udt_setsockopt(u, 0, UDT_SECRET, "", 0) == 0, "an empty secret turns it off");
    len = sizeof v;
    CHECK(udt_getsockopt(u, 0, UDT_ENCRYPTION, &v, &len) == 0 && v == 0, "off again (%d)", v);
    udt_close(u);

    /* Same secret: encrypted, byte-exact, both ends report it. */
    int port = 0;
    int l = encrypted_listener("c secret", 2, &port);
    CHECK(l >= 0, "encrypted listener");
    int c = connect_with("c secret", 2, port);
    CHECK(c >= 0, "encrypted connect");
    int s = udt_accept(l, NULL, NULL);
    CHECK(s >= 0, "accept an encrypted connection");
    len = sizeof v;
    v = 0;
    CHECK(udt_getsockopt(c, 0, UDT_ENCRYPTED, &v, &len) == 0 && v == 1, "client is encrypted");
    len = sizeof v;
    v = 0;
    CHECK(udt_getsockopt(s, 0, UDT_ENCRYPTED, &v, &len) == 0 && v == 1, "accepted socket is encrypted");
    v = 2;
    FAILS_WITH(udt_setsockopt(c, 0, UDT_ENCRYPTION, &v, sizeof v), UDT_ECONNSOCK, "mode after connect");
    enum { N = 300000 };
    unsigned char *out = malloc(N), *in = malloc(N);
    for (int i = 0; i < N; i++) out[i] = pattern_byte(i);
    int sent = 0;
    while (sent < N) {
        int n = udt_send(c, (const char *)out + sent, N - sent, 0);
        if (n <= 0) break;
        sent += n;
    }
    int got = 0;
    while (got < N) {
        int n = udt_recv(s, (char *)in + got, N - got, 0);
        if (n <= 0) break;
        got += n;
    }
    CHECK(sent == N && got == N && memcmp(in, out, N) == 0, "encrypted stream byte-exact (%d of %d)", got, N);
    free(out);
    free(in);
    udt_close(c);
    udt_close(s);

    /* Another secret: refused as a failed security check; no secret: rejected. */
    FAILS_WITH(connect_with("other", 2, port), UDT_ESECFAIL, "a wrong secret");
    FAILS_WITH(connect_with(NULL, 0, port), UDT_ECONNREJ, "a clear client and a required listener");
    udt_close(l);

    /* A clear listener (as UDT4 4.11): required refuses, preferred connects in clear. */
    l = listener(SOCK_STREAM, &port);
    FAILS_WITH(connect_with("k", 2, port), UDT_ECONNREJ, "required and a clear listener");
    c = connect_with("k", 1, port);
    CHECK(c >= 0, "preferred connects to a clear listener");
    len = sizeof v;
    v = 1;
    CHECK(udt_getsockopt(c, 0, UDT_ENCRYPTED, &v, &len) == 0 && v == 0, "... in clear");
    udt_close(c);
    udt_close(l);
}

int main(void) {
    CHECK(udt_startup() == 0, "startup");
    CHECK(udt_startup() == 0, "startup twice");
    test_bad_handles();
    test_socket_args();
    test_bind2();
    test_options();
    test_encryption();
    test_stream();
    test_messages();
    test_files();
    test_epoll();
    test_c_congestion_control();
    test_ipv6();
    test_threads();
    test_close_unblocks();
    test_cleanup();
    CHECK(udt_cleanup() == 0, "final cleanup");
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
