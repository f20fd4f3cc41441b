// Tests of the UDT4 4.11 C++ drop-in (udt.h, ccc.h): the parts C++ adds over the C API —
// CUDTException, the std::set/std::vector forms of select and epoll, the std::fstream forms of
// sendfile/recvfile, TRACEINFO, and congestion control written as CCC subclasses the way
// UDT4's own examples are. Ends with "N passed, M failed"; built and run by scripts/test-c.sh.
#include <arpa/inet.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <ccc.h>
#include <udt.h>

static int passed, failed;

#define CHECK(cond, what)                                                                         \
    do {                                                                                          \
        if (cond) {                                                                               \
            passed++;                                                                             \
        } else {                                                                                  \
            failed++;                                                                             \
            std::printf("FAIL %s:%d: %s [last error %d: %s]\n", __FILE__, __LINE__, what,         \
                        UDT::getlasterror().getErrorCode(), UDT::getlasterror().getErrorMessage()); \
        }                                                                                         \
    } while (0)

static sockaddr_in loopback(int port) {
    sockaddr_in a;
    std::memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<unsigned short>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int port_of(UDTSOCKET u) {
    sockaddr_in a;
    int len = sizeof a;
    if (UDT::getsockname(u, reinterpret_cast<sockaddr*>(&a), &len) == UDT::ERROR) return -1;
    return ntohs(a.sin_port);
}

// A listener on 127.0.0.1 (ephemeral port), optionally with a CCC factory set before listen.
static UDTSOCKET listener(int* port, CCCVirtualFactory* cc = NULL) {
    UDTSOCKET l = UDT::socket(AF_INET, SOCK_STREAM, 0);
    if (cc != NULL) UDT::setsockopt(l, 0, UDT_CC, cc, sizeof *cc);
    sockaddr_in a = loopback(0);
    if (UDT::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) == UDT::ERROR) return UDT::INVALID_SOCK;
    if (UDT::listen(l, 8) == UDT::ERROR) return UDT::INVALID_SOCK;
    *port = port_of(l);
    return l;
}

static bool pair(UDTSOCKET* c, UDTSOCKET* s, CCCVirtualFactory* client_cc = NULL) {
    int port = 0;
    UDTSOCKET l = listener(&port);
    if (l == UDT::INVALID_SOCK) return false;
    *c = UDT::socket(AF_INET, SOCK_STREAM, 0);
    if (client_cc != NULL && UDT::setsockopt(*c, 0, UDT_CC, client_cc, sizeof *client_cc) == UDT::ERROR) return false;
    sockaddr_in a = loopback(port);
    if (UDT::connect(*c, reinterpret_cast<sockaddr*>(&a), sizeof a) == UDT::ERROR) return false;
    *s = UDT::accept(l, NULL, NULL);
    UDT::close(l);
    return *s != UDT::INVALID_SOCK;
}

// Moves `bytes` from c to s (receiving in another thread); true if every byte matched.
static bool transfer(UDTSOCKET c, UDTSOCKET s, int64_t bytes) {
    std::atomic<bool> ok(true);
    std::thread rx([&]() {
        std::vector<char> buf(1 << 16);
        int64_t got = 0;
        while (got < bytes) {
            int n = UDT::recv(s, &buf[0], static_cast<int>(buf.size()), 0);
            if (n <= 0) {
                ok = false;
                return;
            }
            for (int i = 0; i < n; i++)
                if (static_cast<unsigned char>(buf[i]) != (got + i) % 251) ok = false;
            got += n;
        }
    });
    std::vector<char> buf(1 << 16);
    int64_t sent = 0;
    while (sent < bytes) {
        int want = static_cast<int>(std::min<int64_t>(buf.size(), bytes - sent));
        for (int i = 0; i < want; i++) buf[i] = static_cast<char>((sent + i) % 251);
        int n = UDT::send(c, &buf[0], want, 0);
        if (n <= 0) {
            ok = false;
            break;
        }
        if (n < want) {
            // A partial send: resend the rest of this block on the next round.
            sent += n;
            continue;
        }
        sent += n;
    }
    rx.join();
    return ok;
}

// ----- congestion control as CCC subclasses, in UDT4's style ---------------------------------

static std::atomic<int> g_inits(0), g_acks(0), g_sent(0), g_closes(0), g_timeouts(0);

// A window-based algorithm like 4.11's TCP example: slow start, then additive increase.
class WindowCC : public CCC {
public:
    virtual void init() {
        g_inits++;
        m_dPktSndPeriod = 0.0;
        m_dCWndSize = 2.0;
        setACKInterval(2);
        setRTO(1000000);
    }
    virtual void onACK(int32_t) {
        g_acks++;
        if (m_dCWndSize < 64.0) m_dCWndSize += 1.0;
        else m_dCWndSize += 1.0 / m_dCWndSize;
        if (m_dCWndSize > m_dMaxCWndSize) m_dCWndSize = m_dMaxCWndSize;
    }
    virtual void onLoss(const int32_t*, int) { m_dCWndSize = m_dCWndSize / 2 < 2 ? 2 : m_dCWndSize / 2; }
    virtual void onTimeout() { g_timeouts++; m_dCWndSize = 2.0; }
    virtual void onPktSent(const CPacket* p) {
        if (p != NULL && p->getLength() > 0) g_sent++;
    }
    virtual void close() { g_closes++; }
};

// A fixed-rate algorithm like 4.11's UDPBlast: the application changes the rate through the
// instance it reads back with getsockopt(UDT_CC).
// Like UDT4's sample, its constructor sets a 1 s period and a huge window, and the rate is
// set from outside any callback.
class RateCC : public CCC {
public:
    RateCC() {
        m_dPktSndPeriod = 1000000.0;
        m_dCWndSize = 83333.0;
    }
    void setRate(double mbps) { m_dPktSndPeriod = (m_iMSS * 8.0) / mbps; }
    virtual void onACK(int32_t) { seen_mss = m_iMSS; }
    int seen_mss = 0;
};

static void test_errors() {
    CHECK(UDT::socket(AF_UNIX, SOCK_STREAM, 0) == UDT::INVALID_SOCK, "socket(AF_UNIX) fails");
    UDT::ERRORINFO& e = UDT::getlasterror();
    CHECK(e.getErrorCode() == CUDTException::EINVPARAM, "getlasterror has EINVPARAM");
    CHECK(std::strlen(e.getErrorMessage()) > 0, "error message");
    CHECK(UDT::getlasterror_code() == 5003, "getlasterror_code");
    CHECK(std::strlen(UDT::getlasterror_desc()) > 0, "getlasterror_desc");
    CHECK(UDT::close(987654) == UDT::ERROR && UDT::getlasterror_code() == CUDTException::EINVSOCK,
          "close of a made-up handle is EINVSOCK");
    CHECK(UDT::getsockstate(987654) == NONEXIST, "made-up handle is NONEXIST");
    CUDTException mine(2, 1, 0);
    CHECK(mine.getErrorCode() == CUDTException::ECONNLOST, "constructed exception's code");
    mine.clear();
    CHECK(mine.getErrorCode() == 0, "clear()");
}

static void test_select_and_epoll() {
    UDTSOCKET c, s;
    CHECK(pair(&c, &s), "pair");
    UDT::UDSET rs;
    UD_ZERO(&rs);
    UD_SET(s, &rs);
    timeval tv = {0, 20000};
    CHECK(UDT::select(0, &rs, NULL, NULL, &tv) == 0 && rs.empty(), "select times out with 0");
    CHECK(UDT::send(c, "hello", 5, 0) == 5, "send");
    UD_SET(s, &rs);
    tv.tv_sec = 2;
    CHECK(UDT::select(0, &rs, NULL, NULL, &tv) == 1 && UD_ISSET(s, &rs), "select reports readable");
    std::vector<UDTSOCKET> fds(1, s), rd, wr;
    CHECK(UDT::selectEx(fds, &rd, &wr, NULL, 1000) >= 1 && rd.size() == 1 && rd[0] == s, "selectEx");

    int eid = UDT::epoll_create();
    int ev = UDT_EPOLL_IN;
    CHECK(UDT::epoll_add_usock(eid, s, &ev) == 0, "epoll_add_usock");
    std::set<UDTSOCKET> r, w;
    CHECK(UDT::epoll_wait(eid, &r, &w, 1000) == 1 && r.count(s) == 1 && w.empty(), "epoll_wait with sets");
    UDTSOCKET ra[4];
    int rn = 4;
    CHECK(UDT::epoll_wait2(eid, ra, &rn, NULL, NULL, 1000) == 1 && rn == 1 && ra[0] == s, "epoll_wait2");
    char buf[8];
    CHECK(UDT::recv(s, buf, sizeof buf, 0) == 5, "recv");
    CHECK(UDT::epoll_wait(eid, &r, NULL, 10) == UDT::ERROR &&
              UDT::getlasterror_code() == CUDTException::ETIMEOUT && r.empty(),
          "epoll_wait times out with ETIMEOUT and clears the set");
    int p[2];
    CHECK(pipe(p) == 0, "pipe");
    CHECK(UDT::epoll_add_ssock(eid, p[0]) == 0, "epoll_add_ssock");
    CHECK(write(p[1], "x", 1) == 1, "write pipe");
    std::set<SYSSOCKET> lr;
    CHECK(UDT::epoll_wait(eid, &r, NULL, 1000, &lr) == 1 && lr.count(p[0]) == 1, "epoll_wait reports system sockets");
    CHECK(UDT::epoll_remove_ssock(eid, p[0]) == 0 && UDT::epoll_remove_usock(eid, s) == 0, "epoll_remove_*");
    CHECK(UDT::epoll_release(eid) == 0, "epoll_release");
    close(p[0]);
    close(p[1]);
    UDT::close(c);
    UDT::close(s);
}

static void test_files() {
    UDTSOCKET c, s;
    CHECK(pair(&c, &s), "pair for files");
    const char* src = "/tmp/udt_cpp_test_src.bin";
    const char* dst = "/tmp/udt_cpp_test_dst.bin";
    const int64_t size = 2500000;
    {
        std::ofstream f(src, std::ios::binary);
        for (int64_t i = 0; i < size; i++) f.put(static_cast<char>((i * 13) % 251));
    }
    std::fstream in(src, std::ios::in | std::ios::binary);
    std::fstream out(dst, std::ios::out | std::ios::binary | std::ios::trunc);
    int64_t off = 0, roff = 0, got = -1;
    std::thread rx([&]() { got = UDT::recvfile(s, out, roff, size); });
    int64_t sent = UDT::sendfile(c, in, off, size);
    rx.join();
    out.close();
    CHECK(sent == size && off == size, "sendfile(fstream)");
    CHECK(got == size && roff == size, "recvfile(fstream)");
    std::ifstream a(src, std::ios::binary), b(dst, std::ios::binary);
    std::string sa((std::istreambuf_iterator<char>(a)), std::istreambuf_iterator<char>());
    std::string sb((std::istreambuf_iterator<char>(b)), std::istreambuf_iterator<char>());
    CHECK(sa == sb, "received file matches");
    int64_t off2 = 100, roff2 = 0;
    CHECK(UDT::sendfile2(c, src, &off2, 1000) == 1000 && off2 == 1100, "sendfile2");
    CHECK(UDT::recvfile2(s, dst, &roff2, 1000) == 1000 && roff2 == 1000, "recvfile2");
    UDT::TRACEINFO t;
    CHECK(UDT::perfmon(c, &t) == 0 && t.pktSentTotal > 0 && t.msRTT >= 0.0, "perfmon TRACEINFO");
    std::remove(src);
    std::remove(dst);
    UDT::close(c);
    UDT::close(s);
}

static void test_ccc() {
    UDTSOCKET c, s;
    CCCFactory<WindowCC> wf;
    CHECK(pair(&c, &s, &wf), "pair with a CCC window algorithm");
    CHECK(transfer(c, s, 8 << 20), "8 MiB through the CCC algorithm, verified");
    CHECK(g_inits.load() == 1, "init() ran once");
    CHECK(g_acks.load() > 0, "onACK() ran");
    CHECK(g_sent.load() > 0, "onPktSent() saw data packets");
    UDT::TRACEINFO t;
    UDT::perfmon(c, &t);
    CHECK(t.pktCongestionWindow >= 2, "the algorithm's window is in force");
    CCC* handle = reinterpret_cast<CCC*>(1);
    int len = sizeof handle;
    CHECK(UDT::getsockopt(c, 0, UDT_CC, &handle, &len) == 0 && dynamic_cast<WindowCC*>(handle) != NULL,
          "getsockopt(UDT_CC) returns the connection's CCC");
    UDT::close(c);
    UDT::close(s);
    // close() reaches the algorithm when the engine retires the connection.
    for (int i = 0; i < 50 && g_closes.load() == 0; i++) usleep(20000);
    CHECK(g_closes.load() >= 1, "close() ran");

    CCCFactory<RateCC> rf;
    CHECK(pair(&c, &s, &rf), "pair with a CCC rate algorithm");
    RateCC* rate = NULL;
    len = -12345;  // UDT4's sample passes an uninitialised length here
    CHECK(UDT::getsockopt(c, 0, UDT_CC, &rate, &len) == 0 && rate != NULL, "rate algorithm handle");
    UDT::perfmon(c, &t);
    CHECK(t.usPktSndPeriod > 900000.0, "the constructor's period is in force");
    if (rate != NULL) rate->setRate(200.0);
    CHECK(transfer(c, s, 1 << 20), "1 MiB at the rate set through the handle");
    UDT::perfmon(c, &t);
    double want = 1500 * 8.0 / 200.0;  // µs per packet at 200 Mb/s
    CHECK(t.usPktSndPeriod > want * 0.9 && t.usPktSndPeriod < want * 1.1, "the algorithm's period is in force");
    CHECK(rate != NULL && rate->seen_mss == 1500, "the algorithm sees the MSS");
    UDT::close(c);
    UDT::close(s);
}

int main() {
    CHECK(UDT::startup() == 0, "startup");
    test_errors();
    test_select_and_epoll();
    test_files();
    test_ccc();
    CHECK(UDT::cleanup() == 0, "cleanup");
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
