// udt4-perf: a memory-to-memory throughput tool on the reference UDT4 4.11 (Debian libudt),
// with the payload of `udt perf` (the byte at stream offset i is i mod 251), so the two can be
// compared side by side (bench/run.py) and even crossed (their client, our server).
//
//   udt4-perf server --port P [--bind ADDR] [--verify] [--conns N] [--buf BYTES] [--mss BYTES]
//   udt4-perf client HOST:PORT (--bytes N | --time S) [--parallel K] [--buf BYTES] [--mss BYTES]
//
// The server accepts connections concurrently (one thread per connection), receives until the
// peer closes and discards the data (checking every byte with --verify), and prints one JSON
// line per connection; with --conns N it exits after N connections and prints a total line.
// The client opens K connections, each in its own thread, sends ceil(N / K) bytes on each (or
// sends for S seconds on each), closes (UDT4's default linger waits until the data is
// delivered), and prints one JSON line per connection and a total. All UDT4 options stay at their 4.11 defaults unless --buf raises
// UDT_SNDBUF/UDT_RCVBUF and UDP_SNDBUF/UDP_RCVBUF to BYTES.
#include <udt/udt.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

std::mutex g_out;  // one JSON line at a time

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "udt4-perf: %s: %s\n", what.c_str(),
                 UDT::getlasterror().getErrorMessage());
    std::exit(1);
}

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

// A 251-periodic pattern: table[k .. k + len) is the payload at any offset with offset % 251 == k.
std::vector<char> pattern_table(size_t len) {
    std::vector<char> t(len + 251);
    for (size_t i = 0; i < t.size(); i++) t[i] = (char)(unsigned char)(i % 251);
    return t;
}

void set_buffers(UDTSOCKET s, int buf) {
    if (buf <= 0) return;
    if (UDT::setsockopt(s, 0, UDT_SNDBUF, &buf, sizeof buf) == UDT::ERROR ||
        UDT::setsockopt(s, 0, UDT_RCVBUF, &buf, sizeof buf) == UDT::ERROR ||
        UDT::setsockopt(s, 0, UDP_SNDBUF, &buf, sizeof buf) == UDT::ERROR ||
        UDT::setsockopt(s, 0, UDP_RCVBUF, &buf, sizeof buf) == UDT::ERROR)
        die("setsockopt buffers");
}

// --mss: UDT_MSS (bytes of an IP packet, 1500 by default); both ends must set it, since the
// handshake settles on the smaller of the two.
void set_mss(UDTSOCKET s, int mss) {
    if (mss <= 0) return;
    if (UDT::setsockopt(s, 0, UDT_MSS, &mss, sizeof mss) == UDT::ERROR) die("setsockopt UDT_MSS");
}

struct Stats {
    long long retrans = 0, loss = 0;
    double rtt_ms = 0;
};

Stats stats_of(UDTSOCKET s) {
    Stats st;
    UDT::TRACEINFO t;
    if (UDT::perfmon(s, &t, false) != UDT::ERROR) {
        st.retrans = t.pktRetransTotal;
        st.loss = std::max(t.pktSndLossTotal, t.pktRcvLossTotal);
        st.rtt_ms = t.msRTT;
    }
    return st;
}

// ---------------------------------------------------------------------------------------------
// Server

struct ServerOpts {
    int port = 9000;
    std::string bind = "0.0.0.0";
    bool verify = false;
    long conns = 0;  // 0 = forever
    int buf = 0;
    int mss = 0;
};

struct Totals {
    std::mutex m;
    long done = 0;
    unsigned long long bytes = 0;
    bool started = false;
    Clock::time_point first;
    Clock::time_point last;
};

void serve_one(UDTSOCKET c, long id, const std::vector<char>* table, Totals* tot) {
    std::vector<char> buf(8 << 20);
    unsigned long long got = 0, bad = 0;
    auto t0 = Clock::now();
    for (;;) {
        int n = UDT::recv(c, buf.data(), (int)buf.size(), 0);
        if (n == UDT::ERROR || n <= 0) break;  // the peer closed (UDT4 reports it as an error)
        if (table) {
            const char* want = table->data() + got % 251;
            if (std::memcmp(buf.data(), want, (size_t)n) != 0)
                for (int k = 0; k < n; k++) bad += buf[k] != want[k];
        }
        got += (unsigned long long)n;
    }
    double secs = since(t0);
    Stats st = stats_of(c);
    UDT::close(c);
    {
        std::lock_guard<std::mutex> g(g_out);
        std::printf(
            "{\"impl\":\"udt4\",\"role\":\"server\",\"conn\":%ld,\"bytes\":%llu,\"seconds\":%.6f,"
            "\"mbps\":%.3f,\"retransmitted\":%lld,\"loss_pkts\":%lld,\"rtt_ms\":%.3f,"
            "\"verified\":%s,\"mismatched_bytes\":%llu}\n",
            id, got, secs, got * 8.0 / std::max(secs, 1e-9) / 1e6, st.retrans, st.loss, st.rtt_ms,
            table ? (bad == 0 ? "true" : "false") : "null", bad);
        std::fflush(stdout);
    }
    std::lock_guard<std::mutex> g(tot->m);
    tot->bytes += got;
    tot->done++;
    tot->last = Clock::now();
}

int server(const ServerOpts& o) {
    UDTSOCKET l = UDT::socket(AF_INET, SOCK_STREAM, 0);
    if (l == UDT::INVALID_SOCK) die("socket");
    set_buffers(l, o.buf);
    set_mss(l, o.mss);
    sockaddr_in me{};
    me.sin_family = AF_INET;
    me.sin_port = htons((uint16_t)o.port);
    if (inet_pton(AF_INET, o.bind.c_str(), &me.sin_addr) != 1) {
        std::fprintf(stderr, "udt4-perf: bad --bind %s\n", o.bind.c_str());
        return 2;
    }
    if (UDT::bind(l, (sockaddr*)&me, sizeof me) == UDT::ERROR) die("bind");
    if (UDT::listen(l, 1024) == UDT::ERROR) die("listen");
    std::vector<char> table = pattern_table(8 << 20);
    Totals tot;
    std::vector<std::thread> threads;
    double cpu0 = cpu_seconds();
    for (long id = 0; o.conns == 0 || id < o.conns; id++) {
        sockaddr_storage peer;
        int plen = sizeof peer;
        UDTSOCKET c = UDT::accept(l, (sockaddr*)&peer, &plen);
        if (c == UDT::INVALID_SOCK) die("accept");
        {
            std::lock_guard<std::mutex> g(tot.m);
            if (!tot.started) {
                tot.started = true;
                tot.first = Clock::now();
            }
        }
        threads.emplace_back(serve_one, c, id, o.verify ? &table : nullptr, &tot);
    }
    for (auto& t : threads) t.join();
    UDT::close(l);
    double secs = std::chrono::duration<double>(tot.last - tot.first).count();
    std::printf(
        "{\"impl\":\"udt4\",\"role\":\"server\",\"total\":true,\"connections\":%ld,\"bytes\":%llu,"
        "\"seconds\":%.6f,\"mbps\":%.3f,\"cpu_seconds\":%.3f}\n",
        tot.done, tot.bytes, secs, tot.bytes * 8.0 / std::max(secs, 1e-9) / 1e6,
        cpu_seconds() - cpu0);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Client

struct ClientOpts {
    std::string host;
    std::string port;
    unsigned long long bytes = 1ull << 30;
    double time = 0;  // > 0: send for this many seconds instead of `bytes`
    int parallel = 1;
    int buf = 0;
    int mss = 0;
};

struct ConnResult {
    unsigned long long bytes = 0;
    double seconds = 0;
    Stats st;
    bool ok = false;
};

void send_one(const ClientOpts& o, const sockaddr_storage& peer, socklen_t plen,
              unsigned long long limit, Clock::time_point deadline, const std::vector<char>& table,
              ConnResult* r) {
    auto t0 = Clock::now();
    bool timed = o.time > 0;
    UDTSOCKET s = UDT::socket(peer.ss_family, SOCK_STREAM, 0);
    if (s == UDT::INVALID_SOCK) die("socket");
    set_buffers(s, o.buf);
    set_mss(s, o.mss);
    if (UDT::connect(s, (const sockaddr*)&peer, (int)plen) == UDT::ERROR) die("connect");
    const size_t chunk = 1 << 20;
    unsigned long long off = 0;
    while (timed ? Clock::now() < deadline : off < limit) {
        size_t want = timed ? chunk : (size_t)std::min<unsigned long long>(chunk, limit - off);
        int n = UDT::send(s, table.data() + off % 251, (int)want, 0);
        if (n == UDT::ERROR) die("send");
        off += (unsigned long long)n;
    }
    r->st = stats_of(s);
    UDT::close(s);  // lingers (4.11 default: up to 180 s) until the send buffer is delivered
    r->bytes = off;
    r->seconds = since(t0);
    r->ok = true;
}

int client(const ClientOpts& o) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    if (getaddrinfo(o.host.c_str(), o.port.c_str(), &hints, &res) != 0 || !res) {
        std::fprintf(stderr, "udt4-perf: cannot resolve %s:%s\n", o.host.c_str(), o.port.c_str());
        return 2;
    }
    sockaddr_storage peer{};
    std::memcpy(&peer, res->ai_addr, res->ai_addrlen);
    socklen_t plen = res->ai_addrlen;
    freeaddrinfo(res);

    std::vector<char> table = pattern_table(1 << 20);
    unsigned long long per = (o.bytes + o.parallel - 1) / o.parallel;
    std::vector<ConnResult> results(o.parallel);
    std::vector<std::thread> threads;
    double cpu0 = cpu_seconds();
    auto t0 = Clock::now();
    auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(o.time));
    for (int i = 0; i < o.parallel; i++)
        threads.emplace_back(send_one, std::cref(o), std::cref(peer), plen, per, deadline,
                             std::cref(table), &results[i]);
    for (auto& t : threads) t.join();
    double secs = since(t0);
    unsigned long long total = 0;
    long long retrans = 0;
    for (int i = 0; i < o.parallel; i++) {
        const ConnResult& r = results[i];
        total += r.bytes;
        retrans += r.st.retrans;
        std::printf(
            "{\"impl\":\"udt4\",\"role\":\"client\",\"conn\":%d,\"bytes\":%llu,\"seconds\":%.6f,"
            "\"mbps\":%.3f,\"retransmitted\":%lld,\"loss_pkts\":%lld,\"rtt_ms\":%.3f}\n",
            i, r.bytes, r.seconds, r.bytes * 8.0 / std::max(r.seconds, 1e-9) / 1e6, r.st.retrans,
            r.st.loss, r.st.rtt_ms);
    }
    std::printf(
        "{\"impl\":\"udt4\",\"role\":\"client\",\"total\":true,\"connections\":%d,\"bytes\":%llu,"
        "\"seconds\":%.6f,\"mbps\":%.3f,\"retransmitted\":%lld,\"cpu_seconds\":%.3f}\n",
        o.parallel, total, secs, total * 8.0 / std::max(secs, 1e-9) / 1e6, retrans,
        cpu_seconds() - cpu0);
    return 0;
}

[[noreturn]] void usage() {
    std::fprintf(stderr,
                 "usage: udt4-perf server --port P [--bind ADDR] [--verify] [--conns N] [--buf B] [--mss B]\n"
                 "       udt4-perf client HOST:PORT (--bytes N | --time S) [--parallel K] [--buf B] [--mss B]\n");
    std::exit(2);
}

unsigned long long parse_num(const char* s) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(s, &end, 10);
    if (end == s) usage();
    switch (*end) {  // accept K/M/G suffixes (powers of 1000, as iperf3 does not; be explicit)
        case 'K': v *= 1000ull; break;
        case 'M': v *= 1000000ull; break;
        case 'G': v *= 1000000000ull; break;
        case '\0': break;
        default: usage();
    }
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) usage();
    std::string role = argv[1];
    int rc = 2;
    if (UDT::startup() == UDT::ERROR) die("startup");
    if (role == "server") {
        ServerOpts o;
        for (int i = 2; i < argc; i++) {
            std::string a = argv[i];
            auto next = [&]() -> const char* { if (i + 1 >= argc) usage(); return argv[++i]; };
            if (a == "--port") o.port = (int)parse_num(next());
            else if (a == "--bind") o.bind = next();
            else if (a == "--verify") o.verify = true;
            else if (a == "--conns") o.conns = (long)parse_num(next());
            else if (a == "--buf") o.buf = (int)parse_num(next());
            else if (a == "--mss") o.mss = (int)parse_num(next());
            else usage();
        }
        rc = server(o);
    } else if (role == "client") {
        ClientOpts o;
        std::string target;
        for (int i = 2; i < argc; i++) {
            std::string a = argv[i];
            auto next = [&]() -> const char* { if (i + 1 >= argc) usage(); return argv[++i]; };
            if (a == "--bytes") o.bytes = parse_num(next());
            else if (a == "--time") o.time = std::atof(next());
            else if (a == "--parallel") o.parallel = (int)parse_num(next());
            else if (a == "--buf") o.buf = (int)parse_num(next());
            else if (a == "--mss") o.mss = (int)parse_num(next());
            else if (target.empty() && a[0] != '-') target = a;
            else usage();
        }
        size_t colon = target.rfind(':');
        if (colon == std::string::npos || o.parallel < 1) usage();
        o.host = target.substr(0, colon);
        o.port = target.substr(colon + 1);
        if (!o.host.empty() && o.host.front() == '[' && o.host.back() == ']')
            o.host = o.host.substr(1, o.host.size() - 2);
        rc = client(o);
    } else {
        usage();
    }
    UDT::cleanup();
    return rc;
}
