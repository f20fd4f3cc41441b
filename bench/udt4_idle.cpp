// udt4-idle: the cost of idle connections in the reference UDT4 4.11 (Debian libudt).
//
//   udt4-idle [--conns N] [--port P] [--client-port Q] [--idle S]
//
// Opens a listener on 127.0.0.1:P and N client connections to it, all bound to 127.0.0.1:Q.
// UDT4 shares one UDP port (one multiplexer: one send thread and one receive thread) among the
// sockets of a process bound to the same address and port with UDT_REUSEADDR on (its default),
// and an accepted socket always lives on its listener's multiplexer; so the whole test uses two
// UDP ports, one per side, as the comparison with `crates/udt/examples/idle.rs` asks. Once all N
// are accepted, it waits S seconds (default 5) with every connection idle and prints one JSON
// line: connections, threads and RSS of the process (from /proc/self/status), and the CPU time
// the process spent during the idle wait (keep-alives and timers), per second.
#include <udt/udt.h>

#include <arpa/inet.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "udt4-idle: %s: %s\n", what.c_str(),
                 UDT::getlasterror().getErrorMessage());
    std::exit(1);
}

// A numeric field of /proc/self/status ("Threads", "VmRSS", "VmHWM"), or -1.
long status_field(const char* name) {
    std::ifstream f("/proc/self/status");
    std::string line;
    size_t len = std::strlen(name);
    while (std::getline(f, line))
        if (line.compare(0, len, name) == 0 && line.size() > len && line[len] == ':')
            return std::atol(line.c_str() + len + 1);
    return -1;
}

double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

sockaddr_in loopback(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

}  // namespace

int main(int argc, char** argv) {
    long n = 1000;
    int port = 9100, client_port = 9101;
    double idle = 5;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (i + 1 >= argc) goto usage;
        if (a == "--conns") n = std::atol(argv[++i]);
        else if (a == "--port") port = std::atoi(argv[++i]);
        else if (a == "--client-port") client_port = std::atoi(argv[++i]);
        else if (a == "--idle") idle = std::atof(argv[++i]);
        else goto usage;
    }
    if (n < 1) goto usage;
    {
        if (UDT::startup() == UDT::ERROR) die("startup");
        long threads0 = status_field("Threads");
        long rss0 = status_field("VmRSS");

        UDTSOCKET l = UDT::socket(AF_INET, SOCK_STREAM, 0);
        if (l == UDT::INVALID_SOCK) die("socket");
        sockaddr_in la = loopback(port);
        if (UDT::bind(l, (sockaddr*)&la, sizeof la) == UDT::ERROR) die("bind listener");
        // 4.11 refuses handshakes beyond the backlog; allow all N to queue.
        if (UDT::listen(l, (int)n) == UDT::ERROR) die("listen");

        std::vector<UDTSOCKET> accepted;
        accepted.reserve(n);
        std::thread acceptor([&] {
            for (long i = 0; i < n; i++) {
                sockaddr_storage peer;
                int plen = sizeof peer;
                UDTSOCKET c = UDT::accept(l, (sockaddr*)&peer, &plen);
                if (c == UDT::INVALID_SOCK) die("accept");
                accepted.push_back(c);
            }
        });

        auto t0 = Clock::now();
        std::vector<UDTSOCKET> clients;
        clients.reserve(n);
        sockaddr_in ca = loopback(client_port);
        for (long i = 0; i < n; i++) {
            UDTSOCKET s = UDT::socket(AF_INET, SOCK_STREAM, 0);
            if (s == UDT::INVALID_SOCK) die("socket");
            bool reuse = true;  // the 4.11 default, set for clarity
            if (UDT::setsockopt(s, 0, UDT_REUSEADDR, &reuse, sizeof reuse) == UDT::ERROR)
                die("setsockopt UDT_REUSEADDR");
            if (UDT::bind(s, (sockaddr*)&ca, sizeof ca) == UDT::ERROR) die("bind client");
            if (UDT::connect(s, (sockaddr*)&la, sizeof la) == UDT::ERROR) die("connect");
            clients.push_back(s);
        }
        acceptor.join();
        double setup = std::chrono::duration<double>(Clock::now() - t0).count();

        double cpu0 = cpu_seconds();
        std::this_thread::sleep_for(std::chrono::duration<double>(idle));
        double idle_cpu = cpu_seconds() - cpu0;

        std::printf(
            "{\"impl\":\"udt4\",\"connections\":%zu,\"accepted\":%zu,\"udp_ports\":2,"
            "\"threads\":%ld,\"threads_before\":%ld,\"rss_kb\":%ld,\"rss_before_kb\":%ld,"
            "\"hwm_kb\":%ld,\"setup_seconds\":%.3f,\"idle_seconds\":%.1f,"
            "\"idle_cpu_per_s\":%.4f}\n",
            clients.size(), accepted.size(), status_field("Threads"), threads0,
            status_field("VmRSS"), rss0, status_field("VmHWM"), setup, idle,
            idle_cpu / (idle > 0 ? idle : 1));
        std::fflush(stdout);
        // Exit without closing 2N sockets one by one (each close lingers on its own); the
        // process's end releases everything.
        std::_Exit(0);
    }
usage:
    std::fprintf(stderr, "usage: udt4-idle [--conns N] [--port P] [--client-port Q] [--idle S]\n");
    return 2;
}
