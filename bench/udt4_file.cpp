// udt4-file: moves one file with the reference UDT4 4.11's own file calls (Debian libudt):
// UDT::sendfile on one side, UDT::recvfile on the other, both on std::fstream, every option
// at its 4.11 default. The file-transfer side of scripts/bench-files.sh.
//
//   udt4-file recv PORT OUT_PATH     accept one connection, receive one file into OUT_PATH
//   udt4-file send HOST:PORT IN_PATH send IN_PATH to it
//
// The sender first sends the file's size as 8 bytes (little-endian), then the data with one
// UDT::sendfile call, then closes (4.11's default linger waits until the data is delivered).
// The receiver reads the size, calls UDT::recvfile once for all of it and exits 0 only if
// every byte arrived. There is no checksum: UDT4's file calls have none.
#include <udt/udt.h>

#include <arpa/inet.h>
#include <netdb.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace {

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "udt4-file: %s: %s\n", what.c_str(),
                 UDT::getlasterror().getErrorMessage());
    std::exit(1);
}

// Sends or receives exactly len bytes of a small control message.
void send_all(UDTSOCKET s, const char* p, int len) {
    while (len > 0) {
        int n = UDT::send(s, p, len, 0);
        if (n == UDT::ERROR) die("send");
        p += n;
        len -= n;
    }
}

void recv_all(UDTSOCKET s, char* p, int len) {
    while (len > 0) {
        int n = UDT::recv(s, p, len, 0);
        if (n == UDT::ERROR) die("recv");
        p += n;
        len -= n;
    }
}

int do_recv(const char* port, const char* path) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    if (getaddrinfo("127.0.0.1", port, &hints, &res) != 0) die("getaddrinfo");
    UDTSOCKET l = UDT::socket(res->ai_family, res->ai_socktype, res->ai_protocol);
    if (UDT::bind(l, res->ai_addr, res->ai_addrlen) == UDT::ERROR) die("bind");
    freeaddrinfo(res);
    if (UDT::listen(l, 1) == UDT::ERROR) die("listen");
    UDTSOCKET s = UDT::accept(l, nullptr, nullptr);
    if (s == UDT::INVALID_SOCK) die("accept");
    unsigned char hdr[8];
    recv_all(s, reinterpret_cast<char*>(hdr), 8);
    int64_t size = 0;
    for (int i = 7; i >= 0; i--) size = (size << 8) | hdr[i];
    auto t0 = std::chrono::steady_clock::now();
    std::fstream out(path, std::ios::out | std::ios::binary | std::ios::trunc);
    if (!out) {
        std::fprintf(stderr, "udt4-file: cannot create %s\n", path);
        return 1;
    }
    int64_t offset = 0;
    int64_t got = UDT::recvfile(s, out, offset, size);
    out.close();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    UDT::close(s);
    UDT::close(l);
    if (got != size) {
        std::fprintf(stderr, "udt4-file: received %lld of %lld bytes: %s\n", (long long)got,
                     (long long)size, UDT::getlasterror().getErrorMessage());
        return 1;
    }
    std::printf("{\"role\":\"recv\",\"bytes\":%lld,\"seconds\":%.6f}\n", (long long)got, secs);
    return 0;
}

int do_send(const char* hostport, const char* path) {
    std::string hp(hostport);
    size_t colon = hp.rfind(':');
    if (colon == std::string::npos) {
        std::fprintf(stderr, "udt4-file: expected HOST:PORT, got %s\n", hostport);
        return 2;
    }
    std::string host = hp.substr(0, colon), port = hp.substr(colon + 1);
    std::fstream in(path, std::ios::in | std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "udt4-file: cannot open %s\n", path);
        return 1;
    }
    in.seekg(0, std::ios::end);
    int64_t size = in.tellg();
    in.seekg(0, std::ios::beg);
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) die("getaddrinfo");
    UDTSOCKET s = UDT::socket(res->ai_family, res->ai_socktype, res->ai_protocol);
    if (UDT::connect(s, res->ai_addr, res->ai_addrlen) == UDT::ERROR) die("connect");
    freeaddrinfo(res);
    auto t0 = std::chrono::steady_clock::now();
    unsigned char hdr[8];
    for (int i = 0; i < 8; i++) hdr[i] = (unsigned char)((uint64_t)size >> (8 * i));
    send_all(s, reinterpret_cast<char*>(hdr), 8);
    int64_t offset = 0;
    int64_t sent = UDT::sendfile(s, in, offset, size);
    if (sent != size) die("sendfile");
    UDT::close(s);  // lingers until the data is delivered
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("{\"role\":\"send\",\"bytes\":%lld,\"seconds\":%.6f}\n", (long long)sent, secs);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4 || (std::strcmp(argv[1], "recv") != 0 && std::strcmp(argv[1], "send") != 0)) {
        std::fprintf(stderr, "usage: udt4-file recv PORT OUT_PATH | udt4-file send HOST:PORT IN_PATH\n");
        return 2;
    }
    UDT::startup();
    int rc = std::strcmp(argv[1], "recv") == 0 ? do_recv(argv[2], argv[3]) : do_send(argv[2], argv[3]);
    UDT::cleanup();
    return rc;
}
