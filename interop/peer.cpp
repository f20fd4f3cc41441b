// udt4-peer: a small test peer built on the reference UDT4 library (libudt, 4.11), used to check
// that our implementation interoperates with it. Written for this project; it mirrors the
// command-line shape of `udt perf`:
//
//   udt4-peer server --port P [--mode stream|message] [--once] [--bytes N] [--msg-size B]
//                    [--vary-sizes] [--allow-drops] [--inorder] [--bidir]
//                    [--rendezvous --local-port L HOST:PORT] [--bind ADDR] [--mss M] [--timeout S]
//                    [--rcvbuf BYTES]
//   udt4-peer client HOST:PORT [--bytes N | --time S] [--mode stream|message] [--msg-size B]
//                    [--vary-sizes] [--ttl-ms T] [--inorder] [--linger S] [--bidir]
//                    [--rendezvous --local-port L] [--pace-us U] [--mss M] [--timeout S]
//
// Payload convention (shared with `udt perf`): the byte at stream offset i is i mod 251; in
// message mode the offset runs over the concatenation of the messages. Message k has --msg-size
// bytes, or with --vary-sizes 1 + (k * 2654435761 mod msg_size) bytes (the last message is cut
// to what is left of --bytes). Every received byte is verified.
//
// Output on stdout: `{"event":"connected",...}` when a connection is up, then one JSON report
// line per connection (the one with "bytes"). Exit codes: 0 success, 1 verification failed,
// 2 connection setup failed, 3 transfer failed, 64 usage error, 124 --timeout expired.

#include <udt/udt.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

const int EXIT_VERIFY = 1;
const int EXIT_SETUP = 2;
const int EXIT_TRANSFER = 3;
const int EXIT_USAGE = 64;
const int EXIT_TIMEOUT = 124;

enum class Mode { Stream, Message };

struct Options {
    bool server = false;
    std::string peer;          // HOST:PORT (client target, or rendezvous peer)
    std::string bind = "0.0.0.0";
    int port = 9000;           // server listening port
    int local_port = -1;       // rendezvous local port
    bool rendezvous = false;
    Mode mode = Mode::Stream;
    bool once = false;
    int64_t bytes = -1;        // client: bytes to send; server: bytes expected (and sent with --bidir)
    double time_s = -1;        // client: seconds to send
    int64_t msg_size = -1;     // message size (max size with --vary-sizes)
    bool vary = false;
    int ttl_ms = -1;
    bool inorder = false;
    bool allow_drops = false;
    bool bidir = false;
    int linger_s = 180;
    int mss = -1;
    double timeout_s = -1;
    int pace_us = 0;           // client: pause after each send/sendmsg call, microseconds
    int64_t rcvbuf = -1;       // UDT_RCVBUF and UDP_RCVBUF in bytes (UDT4's default: 8192 packets)
};

[[noreturn]] void usage(const char* msg) {
    std::fprintf(stderr,
        "udt4-peer: %s\n"
        "usage: udt4-peer server --port P [--bind ADDR] [--mode stream|message] [--once] [--bytes N]\n"
        "                        [--msg-size B] [--vary-sizes] [--allow-drops] [--inorder] [--bidir]\n"
        "                        [--rendezvous --local-port L HOST:PORT] [--mss M] [--timeout S]\n"
        "                        [--rcvbuf BYTES]\n"
        "       udt4-peer client HOST:PORT [--bytes N | --time S] [--mode stream|message]\n"
        "                        [--msg-size B] [--vary-sizes] [--ttl-ms T] [--inorder] [--linger S]\n"
        "                        [--bidir] [--rendezvous --local-port L] [--pace-us U] [--mss M]\n"
        "                        [--timeout S]\n",
        msg);
    std::exit(EXIT_USAGE);
}

int64_t parse_int(const char* opt, const char* s) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0') {
        std::string m = std::string("bad value for ") + opt + ": " + s;
        usage(m.c_str());
    }
    return v;
}

double parse_double(const char* opt, const char* s) {
    char* end = nullptr;
    double v = std::strtod(s, &end);
    if (end == s || *end != '\0') {
        std::string m = std::string("bad value for ") + opt + ": " + s;
        usage(m.c_str());
    }
    return v;
}

Options parse(int argc, char** argv) {
    Options o;
    if (argc < 2) usage("missing role (server or client)");
    std::string role = argv[1];
    if (role == "server") o.server = true;
    else if (role == "client") o.server = false;
    else if (role == "-h" || role == "--help") usage("help");
    else usage("the role must be server or client");
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&](void) -> const char* {
            if (i + 1 >= argc) usage((a + " needs a value").c_str());
            return argv[++i];
        };
        if (a == "--port") o.port = (int)parse_int("--port", val());
        else if (a == "--bind") o.bind = val();
        else if (a == "--local-port") o.local_port = (int)parse_int("--local-port", val());
        else if (a == "--rendezvous") o.rendezvous = true;
        else if (a == "--mode") {
            std::string m = val();
            if (m == "stream") o.mode = Mode::Stream;
            else if (m == "message") o.mode = Mode::Message;
            else usage("--mode must be stream or message");
        }
        else if (a == "--once") o.once = true;
        else if (a == "--json") { /* always JSON; accepted for symmetry with udt perf */ }
        else if (a == "--bytes") o.bytes = parse_int("--bytes", val());
        else if (a == "--time") o.time_s = parse_double("--time", val());
        else if (a == "--msg-size") o.msg_size = parse_int("--msg-size", val());
        else if (a == "--vary-sizes") o.vary = true;
        else if (a == "--ttl-ms") o.ttl_ms = (int)parse_int("--ttl-ms", val());
        else if (a == "--inorder") o.inorder = true;
        else if (a == "--allow-drops") o.allow_drops = true;
        else if (a == "--bidir") o.bidir = true;
        else if (a == "--linger") o.linger_s = (int)parse_int("--linger", val());
        else if (a == "--mss") o.mss = (int)parse_int("--mss", val());
        else if (a == "--timeout") o.timeout_s = parse_double("--timeout", val());
        else if (a == "--pace-us") o.pace_us = (int)parse_int("--pace-us", val());
        else if (a == "--rcvbuf") o.rcvbuf = parse_int("--rcvbuf", val());
        else if (!a.empty() && a[0] == '-') usage(("unknown option " + a).c_str());
        else if (o.peer.empty()) o.peer = a;
        else usage(("unexpected argument " + a).c_str());
    }
    if (!o.server && o.peer.empty()) usage("client needs HOST:PORT");
    if (o.server && o.rendezvous && o.peer.empty()) usage("rendezvous server needs the peer's HOST:PORT");
    if (o.server && !o.rendezvous && !o.peer.empty()) usage("HOST:PORT is only for clients and rendezvous");
    if (o.rendezvous && o.local_port < 0) {
        if (o.server) o.local_port = o.port;
        else usage("--rendezvous needs --local-port");
    }
    if (o.mode == Mode::Message && !o.server && o.msg_size <= 0) o.msg_size = 1456000;
    if (o.msg_size == 0) usage("--msg-size must be positive");
    if (o.vary && o.msg_size <= 0) usage("--vary-sizes needs --msg-size");
    if (o.allow_drops && (o.vary || o.msg_size <= 0)) usage("--allow-drops needs a fixed --msg-size");
    if (!o.server && o.bytes < 0 && o.time_s < 0) o.time_s = 10;
    if (o.bidir && o.bytes < 0) usage("--bidir needs --bytes (sent by each side)");
    return o;
}

double now_s() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

inline uint8_t expected(uint64_t i) { return (uint8_t)(i % 251); }

// Size of message k (before cutting to the bytes left).
int64_t msg_size_of(const Options& o, uint64_t k) {
    if (o.vary) return 1 + (int64_t)((k * 2654435761ULL) % (uint64_t)o.msg_size);
    return o.msg_size;
}

std::string udt_err() {
    UDT::ERRORINFO& e = UDT::getlasterror();
    char buf[64];
    std::snprintf(buf, sizeof buf, " (UDT error %d)", e.getErrorCode());
    return std::string(e.getErrorMessage()) + buf;
}

int udt_err_code() { return UDT::getlasterror().getErrorCode(); }

[[noreturn]] void fail(int code, const std::string& what) {
    std::fprintf(stderr, "udt4-peer: %s\n", what.c_str());
    std::fflush(stderr);
    std::fflush(stdout);
    std::_Exit(code);
}

bool resolve(const std::string& hostport, sockaddr_in* out) {
    size_t colon = hostport.rfind(':');
    if (colon == std::string::npos) return false;
    std::string host = hostport.substr(0, colon);
    std::string port = hostport.substr(colon + 1);
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr) return false;
    std::memcpy(out, res->ai_addr, sizeof(sockaddr_in));
    freeaddrinfo(res);
    return true;
}

sockaddr_in local_addr(const std::string& host, int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) fail(EXIT_USAGE, "bad --bind address " + host);
    return a;
}

UDTSOCKET new_socket(const Options& o) {
    UDTSOCKET s = UDT::socket(AF_INET, o.mode == Mode::Stream ? SOCK_STREAM : SOCK_DGRAM, 0);
    if (s == UDT::INVALID_SOCK) fail(EXIT_SETUP, "socket() failed: " + udt_err());
    if (o.mss > 0 && UDT::setsockopt(s, 0, UDT_MSS, &o.mss, sizeof o.mss) == UDT::ERROR)
        fail(EXIT_SETUP, "setsockopt(UDT_MSS) failed: " + udt_err());
    if (o.rcvbuf > 0) {
        // UDT4 takes both in bytes; its flow window is the free space of the first, so a path
        // whose BDP exceeds the default 8192 packets needs a larger one.
        if (o.rcvbuf > INT32_MAX) usage("--rcvbuf is at most 2147483647");
        int b = (int)o.rcvbuf;
        if (UDT::setsockopt(s, 0, UDT_RCVBUF, &b, sizeof b) == UDT::ERROR ||
            UDT::setsockopt(s, 0, UDP_RCVBUF, &b, sizeof b) == UDT::ERROR)
            fail(EXIT_SETUP, "setsockopt(UDT_RCVBUF/UDP_RCVBUF) failed: " + udt_err());
    }
    linger l;
    l.l_onoff = o.linger_s > 0 ? 1 : 0;
    l.l_linger = o.linger_s > 0 ? o.linger_s : 0;
    if (UDT::setsockopt(s, 0, UDT_LINGER, &l, sizeof l) == UDT::ERROR)
        fail(EXIT_SETUP, "setsockopt(UDT_LINGER) failed: " + udt_err());
    return s;
}

// Meets the peer in rendezvous mode (both sides bind a known port and connect to each other).
UDTSOCKET rendezvous(const Options& o) {
    UDTSOCKET s = new_socket(o);
    bool on = true;
    if (UDT::setsockopt(s, 0, UDT_RENDEZVOUS, &on, sizeof on) == UDT::ERROR)
        fail(EXIT_SETUP, "setsockopt(UDT_RENDEZVOUS) failed: " + udt_err());
    sockaddr_in me = local_addr(o.bind, o.local_port);
    if (UDT::bind(s, (sockaddr*)&me, sizeof me) == UDT::ERROR)
        fail(EXIT_SETUP, "bind to port " + std::to_string(o.local_port) + " failed: " + udt_err());
    sockaddr_in peer;
    if (!resolve(o.peer, &peer)) fail(EXIT_USAGE, "cannot resolve " + o.peer);
    if (UDT::connect(s, (sockaddr*)&peer, sizeof peer) == UDT::ERROR)
        fail(EXIT_SETUP, "rendezvous with " + o.peer + " failed: " + udt_err());
    return s;
}

UDTSOCKET connect_to(const Options& o) {
    if (o.rendezvous) return rendezvous(o);
    UDTSOCKET s = new_socket(o);
    sockaddr_in peer;
    if (!resolve(o.peer, &peer)) fail(EXIT_USAGE, "cannot resolve " + o.peer);
    if (UDT::connect(s, (sockaddr*)&peer, sizeof peer) == UDT::ERROR)
        fail(EXIT_SETUP, "connect to " + o.peer + " failed: " + udt_err());
    return s;
}

struct Stats {
    int64_t retransmitted = 0;
    int64_t loss_pkts = 0;
    double rtt_ms = 0;
    bool valid = false;
};

void sample_stats(UDTSOCKET s, Stats* st, bool sender) {
    UDT::TRACEINFO t;
    if (UDT::perfmon(s, &t, false) == UDT::ERROR) return;
    st->retransmitted = t.pktRetransTotal;
    st->loss_pkts = sender ? t.pktSndLossTotal : t.pktRcvLossTotal;
    st->rtt_ms = t.msRTT;
    st->valid = true;
}

// ---------------------------------------------------------------------------------------------
// Sending

struct SendResult {
    int64_t bytes = 0;
    int64_t messages = 0;
    double seconds = 0;  // until the last byte was queued
    int error = 0;       // UDT error code, 0 if none
    std::string error_msg;
    Stats stats;
};

SendResult send_pattern(UDTSOCKET s, const Options& o, int64_t limit, double until) {
    SendResult r;
    const int64_t chunk = o.mode == Mode::Stream ? (1 << 20) : o.msg_size;
    std::vector<char> table((size_t)chunk + 251);
    for (size_t i = 0; i < table.size(); ++i) table[i] = (char)expected(i);
    double t0 = now_s();
    int64_t off = 0;
    uint64_t k = 0;
    int calls = 0;
    for (;;) {
        if (limit >= 0 && off >= limit) break;
        if (until > 0 && now_s() >= until) break;
        int64_t want = o.mode == Mode::Stream ? chunk : msg_size_of(o, k);
        if (limit >= 0) want = std::min(want, limit - off);
        const char* data = &table[(size_t)(off % 251)];
        int n;
        if (o.mode == Mode::Stream) {
            n = UDT::send(s, data, (int)want, 0);
        } else {
            n = UDT::sendmsg(s, data, (int)want, o.ttl_ms, o.inorder);
            if (n != UDT::ERROR && n != want) {
                r.error = -1;
                r.error_msg = "sendmsg queued " + std::to_string(n) + " of " + std::to_string(want) + " bytes";
                break;
            }
            ++k;
        }
        if (n == UDT::ERROR) {
            r.error = udt_err_code();
            r.error_msg = "send failed after " + std::to_string(off) + " bytes: " + udt_err();
            break;
        }
        off += n;
        if ((++calls & 63) == 0) sample_stats(s, &r.stats, true);
        if (o.pace_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(o.pace_us));
    }
    sample_stats(s, &r.stats, true);
    r.bytes = off;
    r.messages = (int64_t)k;
    r.seconds = now_s() - t0;
    return r;
}

// ---------------------------------------------------------------------------------------------
// Receiving and verification

struct RecvResult {
    int64_t bytes = 0;
    int64_t mismatched = 0;
    int64_t messages = 0;
    int64_t bad_messages = 0;
    int64_t dropped_messages = 0;
    double seconds = 0;  // from the start to the last byte received
    int end_code = 0;    // UDT error that ended the transfer (2001 = closed / broken)
    std::string end_msg;
    Stats stats;
};

// Checks one received message. Without drops, the message must be exactly the next one of the
// sequence (length and content at the current offset). With --allow-drops (fixed size M), it
// must be a whole message of the pattern: length M (or a shorter final one) and content equal
// to the pattern at k*M for some k (>= the next expected k when in order).
void check_message(const Options& o, const char* m, int64_t len, RecvResult* r, uint64_t* next_k,
                   int64_t* offset, bool* short_seen) {
    r->messages++;
    bool bad = false;
    if (*short_seen) bad = true;  // a cut (final) message was followed by another one
    if (!o.allow_drops) {
        int64_t mism = 0;
        for (int64_t j = 0; j < len; ++j)
            if ((uint8_t)m[j] != expected((uint64_t)(*offset + j))) ++mism;
        r->mismatched += mism;
        if (mism) bad = true;
        if (o.msg_size > 0) {
            int64_t want = msg_size_of(o, *next_k);
            if (len > want) bad = true;
            else if (len < want) {
                if (o.bytes >= 0 && *offset + len != o.bytes) bad = true;
                *short_seen = true;
            }
        }
        *offset += len;
        *next_k += 1;
    } else {
        const int64_t M = o.msg_size;
        if (len > M || len == 0) bad = true;
        if (len < M) *short_seen = true;
        // The content must be a slice of the pattern.
        int64_t mism = 0;
        uint8_t b0 = (uint8_t)m[0];
        for (int64_t j = 0; j < len; ++j)
            if ((uint8_t)m[j] != (uint8_t)((b0 + j) % 251)) ++mism;
        r->mismatched += mism;
        if (mism) bad = true;
        // ... starting at a message boundary k*M.
        uint64_t start = o.inorder ? *next_k : 0;
        bool found = false;
        for (uint64_t k = start; k < start + 251; ++k) {
            if ((uint8_t)((k * (uint64_t)M) % 251) == b0) {
                if (o.inorder) {
                    r->dropped_messages += (int64_t)(k - *next_k);
                    *next_k = k + 1;
                }
                found = true;
                break;
            }
        }
        if (!found) bad = true;
        *offset += len;
    }
    if (bad) r->bad_messages++;
}

// Receives until the peer closes (or `limit` bytes when limit >= 0), verifying everything.
RecvResult recv_pattern(UDTSOCKET s, const Options& o, int64_t limit) {
    RecvResult r;
    size_t bufsize = 1 << 20;
    if (o.mode == Mode::Message) bufsize = o.msg_size > 0 ? (size_t)o.msg_size + 1 : (64u << 20);
    std::vector<char> buf(bufsize);
    double t0 = now_s();
    double t_last = t0;
    uint64_t next_k = 0;
    int64_t offset = 0;
    bool short_seen = false;
    int calls = 0;
    for (;;) {
        if (limit >= 0 && r.bytes >= limit) break;
        int n;
        if (o.mode == Mode::Stream) n = UDT::recv(s, buf.data(), (int)buf.size(), 0);
        else n = UDT::recvmsg(s, buf.data(), (int)buf.size());
        if (n == UDT::ERROR) {
            r.end_code = udt_err_code();
            r.end_msg = udt_err();
            break;
        }
        if (n == 0) continue;
        t_last = now_s();
        if (o.mode == Mode::Stream) {
            int64_t mism = 0;
            for (int j = 0; j < n; ++j)
                if ((uint8_t)buf[j] != expected((uint64_t)(r.bytes + j))) ++mism;
            r.mismatched += mism;
        } else {
            check_message(o, buf.data(), n, &r, &next_k, &offset, &short_seen);
        }
        r.bytes += n;
        if ((++calls & 255) == 0) sample_stats(s, &r.stats, false);
    }
    r.seconds = t_last - t0;
    return r;
}

// ---------------------------------------------------------------------------------------------
// Reports

std::string json_str(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') { out += '\\'; out += c; }
        else if ((unsigned char)c < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\u%04x", c); out += b; }
        else out += c;
    }
    return out + "\"";
}

const char* mode_name(Mode m) { return m == Mode::Stream ? "stream" : "message"; }

double mbps(int64_t bytes, double s) { return (double)bytes * 8.0 / std::max(s, 1e-9) / 1e6; }

bool recv_ok(const Options& o, const RecvResult& r, int64_t expect) {
    if (r.mismatched != 0 || r.bad_messages != 0) return false;
    if (expect >= 0 && !o.allow_drops && r.bytes != expect) return false;
    return true;
}

void print_recv_fields(std::string* out, const RecvResult& r) {
    char b[512];
    std::snprintf(b, sizeof b,
        "\"bytes\":%" PRId64 ",\"seconds\":%.6f,\"mbps\":%.3f,\"mismatched_bytes\":%" PRId64
        ",\"messages\":%" PRId64 ",\"bad_messages\":%" PRId64 ",\"dropped_messages\":%" PRId64
        ",\"retransmitted\":%" PRId64 ",\"loss_pkts\":%" PRId64 ",\"rtt_ms\":%.3f,\"end_code\":%d",
        r.bytes, r.seconds, mbps(r.bytes, r.seconds), r.mismatched, r.messages, r.bad_messages,
        r.dropped_messages, r.stats.retransmitted, r.stats.loss_pkts, r.stats.rtt_ms, r.end_code);
    *out += b;
}

void print_send_fields(std::string* out, const SendResult& s, double total_s, const char* prefix) {
    char b[512];
    std::snprintf(b, sizeof b,
        "\"%sbytes\":%" PRId64 ",\"%sseconds\":%.6f,\"%smbps\":%.3f,\"%smessages\":%" PRId64
        ",\"%squeue_seconds\":%.6f,\"%sretransmitted\":%" PRId64 ",\"%sloss_pkts\":%" PRId64
        ",\"%srtt_ms\":%.3f",
        prefix, s.bytes, prefix, total_s, prefix, mbps(s.bytes, total_s), prefix, s.messages,
        prefix, s.seconds, prefix, s.stats.retransmitted, prefix, s.stats.loss_pkts, prefix,
        s.stats.rtt_ms);
    *out += b;
}

void emit(const std::string& line) {
    std::fprintf(stdout, "%s\n", line.c_str());
    std::fflush(stdout);
}

struct SendThreadArg {
    UDTSOCKET s;
    const Options* o;
    SendResult result;
};

// Handles one established connection; returns the exit code for it.
int run_connection(UDTSOCKET c, const Options& o, const char* role, double t_start) {
    {
        // Tell whoever watches (the tests) that the connection is up.
        sockaddr_in peer{};
        int len = sizeof peer;
        char ip[INET_ADDRSTRLEN] = "?";
        if (UDT::getpeername(c, (sockaddr*)&peer, &len) != UDT::ERROR)
            inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof ip);
        char b[160];
        std::snprintf(b, sizeof b, "{\"event\":\"connected\",\"role\":\"%s\",\"peer\":\"%s:%d\"}", role, ip,
                      (int)ntohs(peer.sin_port));
        emit(b);
    }
    const bool sends = !o.server || o.bidir;
    const bool receives = o.server || o.bidir;
    SendThreadArg sa{c, &o, {}};
    std::thread sender;
    if (sends) {
        sender = std::thread([&sa, t_start]() {
            double until = sa.o->time_s > 0 ? t_start + sa.o->time_s : -1;
            sa.result = send_pattern(sa.s, *sa.o, sa.o->bytes, until);
        });
    }
    RecvResult rr;
    if (receives) rr = recv_pattern(c, o, o.bidir ? o.bytes : -1);
    if (sends) sender.join();
    // Close with linger: returns once everything queued has been acknowledged.
    double tc = now_s();
    UDT::close(c);
    double t_end = now_s();
    double close_s = t_end - tc;

    std::string line = std::string("{\"role\":\"") + role + "\",\"impl\":\"udt4\",\"mode\":\"" +
                       mode_name(o.mode) + "\",";
    int code = 0;
    if (receives) {
        print_recv_fields(&line, rr);
        bool ok = recv_ok(o, rr, o.bidir ? o.bytes : o.bytes);
        line += std::string(",\"verified\":") + (ok ? "true" : "false");
        if (!ok) code = EXIT_VERIFY;
        if (!rr.end_msg.empty() && (o.bidir ? rr.bytes < o.bytes : false)) code = EXIT_TRANSFER;
        line += ",";
    }
    if (sends) {
        print_send_fields(&line, sa.result, t_end - t_start, o.bidir ? "sent_" : "");
        if (!o.bidir) line += ",\"verified\":true,\"mismatched_bytes\":0";
        if (sa.result.error != 0) {
            line += ",\"send_error\":" + json_str(sa.result.error_msg);
            code = EXIT_TRANSFER;
        }
        line += ",";
    }
    char b[128];
    std::snprintf(b, sizeof b, "\"close_seconds\":%.6f}", close_s);
    line += b;
    emit(line);
    if (sends && sa.result.error != 0)
        std::fprintf(stderr, "udt4-peer: %s\n", sa.result.error_msg.c_str());
    if (receives && code == EXIT_VERIFY)
        std::fprintf(stderr, "udt4-peer: verification failed: %" PRId64 " bytes received, %" PRId64
                     " mismatched, %" PRId64 " bad messages (expected %" PRId64 " bytes)\n",
                     rr.bytes, rr.mismatched, rr.bad_messages, o.bytes);
    return code;
}

int run_server(const Options& o) {
    if (o.rendezvous) {
        UDTSOCKET c = rendezvous(o);
        return run_connection(c, o, "server", now_s());
    }
    UDTSOCKET l = new_socket(o);
    sockaddr_in me = local_addr(o.bind, o.port);
    if (UDT::bind(l, (sockaddr*)&me, sizeof me) == UDT::ERROR)
        fail(EXIT_SETUP, "bind to " + o.bind + ":" + std::to_string(o.port) + " failed: " + udt_err());
    if (UDT::listen(l, 16) == UDT::ERROR) fail(EXIT_SETUP, "listen failed: " + udt_err());
    int worst = 0;
    for (;;) {
        sockaddr_in peer;
        int plen = sizeof peer;
        UDTSOCKET c = UDT::accept(l, (sockaddr*)&peer, &plen);
        if (c == UDT::INVALID_SOCK) fail(EXIT_SETUP, "accept failed: " + udt_err());
        int code = run_connection(c, o, "server", now_s());
        worst = std::max(worst, code);
        if (o.once) break;
    }
    UDT::close(l);
    return worst;
}

int run_client(const Options& o) {
    UDTSOCKET c = connect_to(o);
    return run_connection(c, o, "client", now_s());
}

}  // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    // A peer that goes away must not kill us with SIGPIPE (UDT uses UDP, but be safe).
    signal(SIGPIPE, SIG_IGN);
    if (o.timeout_s > 0) {
        std::thread([t = o.timeout_s]() {
            std::this_thread::sleep_for(std::chrono::duration<double>(t));
            std::fprintf(stderr, "udt4-peer: --timeout of %.1f s expired\n", t);
            std::fflush(stdout);
            std::fflush(stderr);
            std::_Exit(EXIT_TIMEOUT);
        }).detach();
    }
    if (UDT::startup() == UDT::ERROR) fail(EXIT_SETUP, "startup failed: " + udt_err());
    int code = o.server ? run_server(o) : run_client(o);
    UDT::cleanup();
    return code;
}
