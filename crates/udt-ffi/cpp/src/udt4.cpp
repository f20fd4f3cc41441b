// UDT4's C++ API (udt.h) over the C ABI (udt_c.h). Every function forwards to its udt_
// counterpart; what is here is only what C++ adds: the thread's CUDTException, std::set and
// std::vector forms of select/epoll, std::fstream forms of sendfile/recvfile, and UDT_CC with
// a CCC factory (ccc.cpp).
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <vector>

#include "udt.h"

// The C header declares C enums whose member names (UDT_MSS, UDT_EPOLL_IN, ...) are also
// UDT4's C++ enum members: keep them apart in a namespace. Its functions are extern "C", so
// the namespace does not change the symbols they link to.
namespace cabi {
#include <udt_c.h>
}

#include "dropin_internal.h"

// ----- error codes ------------------------------------------------------------------------

const int CUDTException::SUCCESS = 0;
const int CUDTException::ECONNSETUP = 1000;
const int CUDTException::ENOSERVER = 1001;
const int CUDTException::ECONNREJ = 1002;
const int CUDTException::ESOCKFAIL = 1003;
const int CUDTException::ESECFAIL = 1004;
const int CUDTException::ECONNFAIL = 2000;
const int CUDTException::ECONNLOST = 2001;
const int CUDTException::ENOCONN = 2002;
const int CUDTException::ERESOURCE = 3000;
const int CUDTException::ETHREAD = 3001;
const int CUDTException::ENOBUF = 3002;
const int CUDTException::EFILE = 4000;
const int CUDTException::EINVRDOFF = 4001;
const int CUDTException::ERDPERM = 4002;
const int CUDTException::EINVWROFF = 4003;
const int CUDTException::EWRPERM = 4004;
const int CUDTException::EINVOP = 5000;
const int CUDTException::EBOUNDSOCK = 5001;
const int CUDTException::ECONNSOCK = 5002;
const int CUDTException::EINVPARAM = 5003;
const int CUDTException::EINVSOCK = 5004;
const int CUDTException::EUNBOUNDSOCK = 5005;
const int CUDTException::ENOLISTEN = 5006;
const int CUDTException::ERDVNOSERV = 5007;
const int CUDTException::ERDVUNBOUND = 5008;
const int CUDTException::ESTREAMILL = 5009;
const int CUDTException::EDGRAMILL = 5010;
const int CUDTException::EDUPLISTEN = 5011;
const int CUDTException::ELARGEMSG = 5012;
const int CUDTException::EINVPOLLID = 5013;
const int CUDTException::EASYNCFAIL = 6000;
const int CUDTException::EASYNCSND = 6001;
const int CUDTException::EASYNCRCV = 6002;
const int CUDTException::ETIMEOUT = 6003;
const int CUDTException::EPEERERR = 7000;
const int CUDTException::EUNKNOWN = -1;

namespace {

// A fallback description by category, for exceptions an application constructs itself.
const char* category_text(int code) {
    switch (code / 1000) {
        case 0: return code == 0 ? "Success" : "Unknown error";
        case 1: return "Connection setup failure";
        case 2: return "Connection was broken";
        case 3: return "System resource failure";
        case 4: return "File system failure";
        case 5: return "Operation not supported";
        case 6: return "Non-blocking call failure";
        case 7: return "The peer side has signalled an error";
        default: return "Unknown error";
    }
}

}  // namespace

CUDTException::CUDTException(int major, int minor, int err)
    : m_iMajor(major), m_iMinor(minor), m_iErrno(err) {}

CUDTException::CUDTException(const CUDTException& e)
    : m_iMajor(e.m_iMajor), m_iMinor(e.m_iMinor), m_iErrno(e.m_iErrno), m_strMsg(e.m_strMsg) {}

CUDTException& CUDTException::operator=(const CUDTException& e) {
    m_iMajor = e.m_iMajor;
    m_iMinor = e.m_iMinor;
    m_iErrno = e.m_iErrno;
    m_strMsg = e.m_strMsg;
    return *this;
}

CUDTException::~CUDTException() {}

CUDTException CUDTException::fromCode(int code, int err, const char* desc) {
    CUDTException e(code < 0 ? -1 : code / 1000, code < 0 ? 0 : code % 1000, err);
    if (desc != NULL) e.m_strMsg = desc;
    return e;
}

const char* CUDTException::getErrorMessage() {
    if (m_strMsg.empty()) {
        m_strMsg = category_text(getErrorCode());
        if (m_iErrno > 0) {
            m_strMsg += ": ";
            m_strMsg += strerror(m_iErrno);
        }
    }
    return m_strMsg.c_str();
}

int CUDTException::getErrorCode() const {
    if (m_iMajor < 0) return -1;
    return m_iMajor * 1000 + m_iMinor;
}

void CUDTException::clear() {
    m_iMajor = 0;
    m_iMinor = 0;
    m_iErrno = 0;
    m_strMsg.clear();
}

// ----- the API ------------------------------------------------------------------------------

namespace UDT {

const UDTSOCKET INVALID_SOCK = -1;
const int ERROR = -1;

int startup() { return cabi::udt_startup(); }

int cleanup() { return cabi::udt_cleanup(); }

UDTSOCKET socket(int af, int type, int protocol) { return cabi::udt_socket(af, type, protocol); }

int bind(UDTSOCKET u, const struct sockaddr* name, int namelen) { return cabi::udt_bind(u, name, namelen); }

int bind2(UDTSOCKET u, UDPSOCKET udpsock) { return cabi::udt_bind2(u, udpsock); }

int listen(UDTSOCKET u, int backlog) { return cabi::udt_listen(u, backlog); }

UDTSOCKET accept(UDTSOCKET u, struct sockaddr* addr, int* addrlen) { return cabi::udt_accept(u, addr, addrlen); }

int connect(UDTSOCKET u, const struct sockaddr* name, int namelen) { return cabi::udt_connect(u, name, namelen); }

int close(UDTSOCKET u) { return cabi::udt_close(u); }

int getpeername(UDTSOCKET u, struct sockaddr* name, int* namelen) { return cabi::udt_getpeername(u, name, namelen); }

int getsockname(UDTSOCKET u, struct sockaddr* name, int* namelen) { return cabi::udt_getsockname(u, name, namelen); }

int getsockopt(UDTSOCKET u, int level, SOCKOPT optname, void* optval, int* optlen) {
    if (optname == UDT_CC) return udt_dropin::get_cc(u, optval, optlen);
    return cabi::udt_getsockopt(u, level, optname, optval, optlen);
}

int setsockopt(UDTSOCKET u, int level, SOCKOPT optname, const void* optval, int optlen) {
    // UDT4 passes a CCCVirtualFactory* for UDT_CC; the C ABI takes a name or a callback table.
    if (optname == UDT_CC) return udt_dropin::set_cc(u, optval, optlen);
    return cabi::udt_setsockopt(u, level, optname, optval, optlen);
}

int send(UDTSOCKET u, const char* buf, int len, int flags) { return cabi::udt_send(u, buf, len, flags); }

int recv(UDTSOCKET u, char* buf, int len, int flags) { return cabi::udt_recv(u, buf, len, flags); }

int sendmsg(UDTSOCKET u, const char* buf, int len, int ttl, bool inorder) {
    return cabi::udt_sendmsg(u, buf, len, ttl, inorder ? 1 : 0);
}

int recvmsg(UDTSOCKET u, char* buf, int len) { return cabi::udt_recvmsg(u, buf, len); }

namespace {

// Records an error of the drop-in itself (a bad stream, say) as the thread's last error.
int fail_with(int code, const char* what) {
    udt_dropin::set_local_error(code, what);
    return ERROR;
}

}  // namespace

int64_t sendfile(UDTSOCKET u, std::fstream& ifs, int64_t& offset, int64_t size, int block) {
    if (size < 0 || offset < 0) return fail_with(CUDTException::EINVPARAM, "negative offset or size");
    if (block <= 0) block = 364000;
    ifs.seekg(offset);
    if (ifs.fail()) return fail_with(CUDTException::EINVRDOFF, "cannot seek the input stream");
    std::vector<char> buf(static_cast<size_t>(std::min<int64_t>(block, 1 << 20)));
    int64_t done = 0;
    while (done < size) {
        std::streamsize want = static_cast<std::streamsize>(std::min<int64_t>(buf.size(), size - done));
        ifs.read(buf.data(), want);
        std::streamsize got = ifs.gcount();
        if (got <= 0) {
            offset += done;
            return fail_with(CUDTException::EFILE, "the input stream ended or failed");
        }
        int64_t sent = 0;
        while (sent < got) {
            int n = cabi::udt_send(u, buf.data() + sent, static_cast<int>(got - sent), 0);
            if (n < 0) {
                offset += done + sent;
                return ERROR;
            }
            sent += n;
        }
        done += got;
    }
    offset += done;
    return done;
}

int64_t recvfile(UDTSOCKET u, std::fstream& ofs, int64_t& offset, int64_t size, int block) {
    if (size < 0 || offset < 0) return fail_with(CUDTException::EINVPARAM, "negative offset or size");
    if (block <= 0) block = 7280000;
    ofs.seekp(offset);
    if (ofs.fail()) return fail_with(CUDTException::EINVWROFF, "cannot seek the output stream");
    std::vector<char> buf(static_cast<size_t>(std::min<int64_t>(block, 1 << 20)));
    int64_t done = 0;
    while (done < size) {
        int want = static_cast<int>(std::min<int64_t>(buf.size(), size - done));
        int n = cabi::udt_recv(u, buf.data(), want, 0);
        if (n < 0) {
            offset += done;
            return ERROR;
        }
        ofs.write(buf.data(), n);
        if (ofs.fail()) {
            offset += done;
            return fail_with(CUDTException::EWRPERM, "cannot write the output stream");
        }
        done += n;
    }
    offset += done;
    return done;
}

int64_t sendfile2(UDTSOCKET u, const char* path, int64_t* offset, int64_t size, int block) {
    return cabi::udt_sendfile2(u, path, offset, size, block);
}

int64_t recvfile2(UDTSOCKET u, const char* path, int64_t* offset, int64_t size, int block) {
    return cabi::udt_recvfile2(u, path, offset, size, block);
}

namespace {

// Waits on `fds` with a temporary poller: the common core of select and selectEx. Returns
// the count of sockets reported, 0 on timeout, or ERROR.
int select_core(const std::vector<UDTSOCKET>& want_r, const std::vector<UDTSOCKET>& want_w,
                const std::vector<UDTSOCKET>& want_e, int64_t ms, std::vector<UDTSOCKET>* got_r,
                std::vector<UDTSOCKET>* got_w, std::vector<UDTSOCKET>* got_e) {
    int eid = cabi::udt_epoll_create();
    if (eid < 0) return ERROR;
    std::set<UDTSOCKET> all;
    all.insert(want_r.begin(), want_r.end());
    all.insert(want_w.begin(), want_w.end());
    all.insert(want_e.begin(), want_e.end());
    for (std::set<UDTSOCKET>::const_iterator it = all.begin(); it != all.end(); ++it) {
        int ev = 0;
        if (std::find(want_r.begin(), want_r.end(), *it) != want_r.end()) ev |= UDT_EPOLL_IN;
        if (std::find(want_w.begin(), want_w.end(), *it) != want_w.end()) ev |= UDT_EPOLL_OUT;
        if (std::find(want_e.begin(), want_e.end(), *it) != want_e.end()) ev |= UDT_EPOLL_ERR;
        ev |= UDT_EPOLL_ERR;
        if (cabi::udt_epoll_add_usock(eid, *it, &ev) < 0) {
            cabi::udt_epoll_release(eid);
            return ERROR;
        }
    }
    std::vector<int> r(all.size() + 1), w(all.size() + 1);
    int rn = static_cast<int>(r.size()), wn = static_cast<int>(w.size());
    int rc = cabi::udt_epoll_wait(eid, r.data(), &rn, w.data(), &wn, ms, NULL, NULL, NULL, NULL);
    bool timed_out = rc < 0 && cabi::udt_getlasterror_code() == CUDTException::ETIMEOUT;
    cabi::udt_epoll_release(eid);
    if (rc < 0 && !timed_out) return ERROR;
    if (timed_out) rn = wn = 0;
    int count = 0;
    for (int i = 0; i < rn; ++i) {
        UDTSOCKET s = r[i];
        bool broken = cabi::udt_getsockstate(s) >= BROKEN;
        if (got_e && broken && std::find(want_e.begin(), want_e.end(), s) != want_e.end()) {
            got_e->push_back(s);
            ++count;
        }
        if (got_r && std::find(want_r.begin(), want_r.end(), s) != want_r.end()) {
            got_r->push_back(s);
            ++count;
        }
    }
    for (int i = 0; i < wn; ++i) {
        if (got_w && std::find(want_w.begin(), want_w.end(), w[i]) != want_w.end()) {
            got_w->push_back(w[i]);
            ++count;
        }
    }
    return count;
}

}  // namespace

int select(int nfds, UDSET* readfds, UDSET* writefds, UDSET* exceptfds, const struct timeval* timeout) {
    (void)nfds;
    if (readfds == NULL && writefds == NULL && exceptfds == NULL)
        return fail_with(CUDTException::EINVPARAM, "no socket set given");
    std::vector<UDTSOCKET> r, w, e;
    if (readfds) r.assign(readfds->begin(), readfds->end());
    if (writefds) w.assign(writefds->begin(), writefds->end());
    if (exceptfds) e.assign(exceptfds->begin(), exceptfds->end());
    int64_t ms = timeout == NULL ? -1 : int64_t(timeout->tv_sec) * 1000 + timeout->tv_usec / 1000;
    std::vector<UDTSOCKET> gr, gw, ge;
    int n = select_core(r, w, e, ms, &gr, &gw, &ge);
    if (n < 0) return n;
    if (readfds) readfds->clear(), readfds->insert(gr.begin(), gr.end());
    if (writefds) writefds->clear(), writefds->insert(gw.begin(), gw.end());
    if (exceptfds) exceptfds->clear(), exceptfds->insert(ge.begin(), ge.end());
    return n;
}

int selectEx(const std::vector<UDTSOCKET>& fds, std::vector<UDTSOCKET>* readfds, std::vector<UDTSOCKET>* writefds,
             std::vector<UDTSOCKET>* exceptfds, int64_t msTimeOut) {
    if (readfds == NULL && writefds == NULL && exceptfds == NULL)
        return fail_with(CUDTException::EINVPARAM, "no socket set given");
    if (readfds) readfds->clear();
    if (writefds) writefds->clear();
    if (exceptfds) exceptfds->clear();
    static const std::vector<UDTSOCKET> none;
    return select_core(readfds ? fds : none, writefds ? fds : none, exceptfds ? fds : none, msTimeOut, readfds,
                       writefds, exceptfds);
}

int epoll_create() { return cabi::udt_epoll_create(); }

int epoll_add_usock(int eid, UDTSOCKET u, const int* events) { return cabi::udt_epoll_add_usock(eid, u, events); }

int epoll_add_ssock(int eid, SYSSOCKET s, const int* events) { return cabi::udt_epoll_add_ssock(eid, s, events); }

int epoll_remove_usock(int eid, UDTSOCKET u) { return cabi::udt_epoll_remove_usock(eid, u); }

int epoll_remove_ssock(int eid, SYSSOCKET s) { return cabi::udt_epoll_remove_ssock(eid, s); }

int epoll_wait(int eid, std::set<UDTSOCKET>* readfds, std::set<UDTSOCKET>* writefds, int64_t msTimeOut,
               std::set<SYSSOCKET>* lrfds, std::set<SYSSOCKET>* lwfds) {
    int size = cabi::udt_epoll_size(eid);
    if (size < 0) return ERROR;
    size_t cap = static_cast<size_t>(size) + 1;
    std::vector<int> r(cap), w(cap), lr(cap), lw(cap);
    int rn = static_cast<int>(cap), wn = rn, lrn = rn, lwn = rn;
    if (readfds) readfds->clear();
    if (writefds) writefds->clear();
    if (lrfds) lrfds->clear();
    if (lwfds) lwfds->clear();
    int rc = cabi::udt_epoll_wait(eid, readfds ? r.data() : NULL, readfds ? &rn : NULL, writefds ? w.data() : NULL,
                                  writefds ? &wn : NULL, msTimeOut, lrfds ? lr.data() : NULL, lrfds ? &lrn : NULL,
                                  lwfds ? lw.data() : NULL, lwfds ? &lwn : NULL);
    if (rc < 0) return rc;
    if (readfds) readfds->insert(r.begin(), r.begin() + rn);
    if (writefds) writefds->insert(w.begin(), w.begin() + wn);
    if (lrfds) lrfds->insert(lr.begin(), lr.begin() + lrn);
    if (lwfds) lwfds->insert(lw.begin(), lw.begin() + lwn);
    return rc;
}

int epoll_wait2(int eid, UDTSOCKET* readfds, int* rnum, UDTSOCKET* writefds, int* wnum, int64_t msTimeOut,
                SYSSOCKET* lrfds, int* lrnum, SYSSOCKET* lwfds, int* lwnum) {
    return cabi::udt_epoll_wait(eid, readfds, rnum, writefds, wnum, msTimeOut, lrfds, lrnum, lwfds, lwnum);
}

int epoll_release(int eid) { return cabi::udt_epoll_release(eid); }

ERRORINFO& getlasterror() {
    static thread_local CUDTException last;
    last = CUDTException::fromCode(cabi::udt_getlasterror_code(), cabi::udt_getlasterror_errno(),
                                   cabi::udt_getlasterror_desc());
    return last;
}

int getlasterror_code() { return getlasterror().getErrorCode(); }

const char* getlasterror_desc() { return getlasterror().getErrorMessage(); }

int perfmon(UDTSOCKET u, TRACEINFO* perf, bool clear) {
    if (perf == NULL) return fail_with(CUDTException::EINVPARAM, "perf is null");
    cabi::udt_traceinfo t;
    int rc = cabi::udt_perfmon(u, &t, clear ? 1 : 0);
    if (rc < 0) return rc;
    udt_dropin::copy_perf(t, perf);
    return 0;
}

UDTSTATUS getsockstate(UDTSOCKET u) { return static_cast<UDTSTATUS>(cabi::udt_getsockstate(u)); }

}  // namespace UDT
