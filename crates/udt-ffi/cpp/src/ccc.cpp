// CCC over the C ABI's congestion-control callbacks (udt_cc_ops): each callback loads the
// connection's measurements into the CCC's members, calls the virtual hook, and hands the two
// controls back. C++ exceptions stop here: none may cross into the engine.
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <map>
#include <mutex>

#include "ccc.h"
#include "udt.h"

namespace cabi {
#include <udt_c.h>
}

#include "dropin_internal.h"

namespace {

const int32_t kSynUs = 10000;

// What the engine keeps for one UDT_CC setting: the application's factory (our clone) and,
// for UDT4's getsockopt(UDT_CC), the socket it was set on and the instance it built last.
struct FactoryRef {
    CCCVirtualFactory* factory;
    UDTSOCKET owner;
    CCC* last;
};

std::mutex& registry_lock() {
    static std::mutex m;
    return m;
}

// Socket -> its factory, for getsockopt(UDT_CC).
std::map<UDTSOCKET, FactoryRef*>& registry() {
    static std::map<UDTSOCKET, FactoryRef*> r;
    return r;
}

}  // namespace

struct udt_dropin_cc_bridge {
    static void load(CCC* c, cabi::udt_cc_ctx* ctx) {
        c->m_pCtx = ctx;
        c->m_iMSS = ctx->mss;
        c->m_dMaxCWndSize = ctx->max_cwnd;
        c->m_iSndCurrSeqNo = ctx->snd_curr_seq;
        c->m_iRcvRate = ctx->rcv_rate;
        c->m_iRTT = ctx->rtt_us;
        c->m_iBandwidth = ctx->bandwidth;
        // The window and the period are the algorithm's: as in UDT4 the engine takes them
        // from the CCC after every callback (so a constructor's or setRate()'s values hold),
        // and never writes them into it.
        apply_pending(c);
    }

    // Settings made outside a callback (in a constructor, say) take effect at the next one.
    static void apply_pending(CCC* c) {
        cabi::udt_cc_ctx* ctx = static_cast<cabi::udt_cc_ctx*>(c->m_pCtx);
        if (c->m_iACKPeriod >= 0) cabi::udt_cc_set_ack_timer(ctx, int64_t(c->m_iACKPeriod) * 1000);
        if (c->m_iACKInterval >= 0) cabi::udt_cc_set_ack_interval(ctx, c->m_iACKInterval);
        if (c->m_iRTO >= 0) cabi::udt_cc_set_rto(ctx, c->m_iRTO);
        c->m_iACKPeriod = c->m_iACKInterval = c->m_iRTO = -1;
    }

    static void store(CCC* c, cabi::udt_cc_ctx* ctx) {
        apply_pending(c);
        ctx->pkt_snd_period_us = c->m_dPktSndPeriod;
        ctx->cwnd = c->m_dCWndSize;
        c->m_pCtx = NULL;
    }

    template <class F>
    static void run(void* cc, cabi::udt_cc_ctx* ctx, F hook) {
        CCC* c = static_cast<CCC*>(cc);
        if (c == NULL || ctx == NULL) return;
        load(c, ctx);
        try {
            hook(c);
        } catch (...) {
            // An algorithm's exception must not unwind into the engine; the controls it set
            // before throwing still apply.
        }
        store(c, ctx);
    }

    static void* create(void* user) {
        FactoryRef* ref = static_cast<FactoryRef*>(user);
        try {
            CCC* c = ref->factory->create();
            std::lock_guard<std::mutex> g(registry_lock());
            ref->last = c;
            return c;
        } catch (...) {
            return NULL;
        }
    }

    static void destroy(void* cc) {
        CCC* c = static_cast<CCC*>(cc);
        {
            std::lock_guard<std::mutex> g(registry_lock());
            for (std::map<UDTSOCKET, FactoryRef*>::iterator it = registry().begin(); it != registry().end(); ++it)
                if (it->second->last == c) it->second->last = NULL;
        }
        try {
            delete c;
        } catch (...) {
        }
    }

    static void release(void* user) {
        FactoryRef* ref = static_cast<FactoryRef*>(user);
        {
            std::lock_guard<std::mutex> g(registry_lock());
            std::map<UDTSOCKET, FactoryRef*>::iterator it = registry().find(ref->owner);
            if (it != registry().end() && it->second == ref) registry().erase(it);
        }
        try {
            delete ref->factory;
        } catch (...) {
        }
        delete ref;
    }

    static void init(void* cc, cabi::udt_cc_ctx* ctx) { run(cc, ctx, [](CCC* c) { c->init(); }); }
    static void close(void* cc, cabi::udt_cc_ctx* ctx) { run(cc, ctx, [](CCC* c) { c->close(); }); }
    static void on_ack(void* cc, cabi::udt_cc_ctx* ctx, int32_t ack) {
        run(cc, ctx, [ack](CCC* c) { c->onACK(ack); });
    }
    static void on_loss(void* cc, cabi::udt_cc_ctx* ctx, const int32_t* losses, int n) {
        run(cc, ctx, [losses, n](CCC* c) { c->onLoss(losses, n); });
    }
    static void on_timeout(void* cc, cabi::udt_cc_ctx* ctx) { run(cc, ctx, [](CCC* c) { c->onTimeout(); }); }

    static void data_packet(const cabi::udt_cc_packet* p, CPacket* out) {
        out->m_iSeqNo = p->seq;
        out->m_iMsgNo = p->msgno;
        out->m_iTimeStamp = p->timestamp;
        out->setLength(p->payload_len);
    }
    static void on_pkt_sent(void* cc, cabi::udt_cc_ctx* ctx, const cabi::udt_cc_packet* p) {
        CPacket pkt;
        data_packet(p, &pkt);
        run(cc, ctx, [&pkt](CCC* c) { c->onPktSent(&pkt); });
    }
    static void on_pkt_received(void* cc, cabi::udt_cc_ctx* ctx, const cabi::udt_cc_packet* p) {
        CPacket pkt;
        data_packet(p, &pkt);
        run(cc, ctx, [&pkt](CCC* c) { c->onPktReceived(&pkt); });
    }
    static void process_custom_msg(void* cc, cabi::udt_cc_ctx* ctx, const cabi::udt_cc_custom_msg* m) {
        CPacket pkt;
        int32_t ext = m->ext_type;
        pkt.pack(0x7FFF, &ext, const_cast<uint8_t*>(m->body), m->body_len);
        pkt.m_iMsgNo = static_cast<int32_t>(m->info);
        run(cc, ctx, [&pkt](CCC* c) { c->processCustomMsg(&pkt); });
    }

    static void send_custom(const CCC* c, CPacket& pkt) {
        if (c->m_pCtx == NULL) return;  // outside a callback there is no connection to use
        cabi::udt_cc_send_custom(static_cast<cabi::udt_cc_ctx*>(c->m_pCtx), pkt.getExtendedType(),
                                 static_cast<uint32_t>(pkt.getAckSeqNo()),
                                 reinterpret_cast<const uint8_t*>(pkt.m_pcData), pkt.getLength());
    }

    static const CPerfMon* perf(CCC* c) {
        if (c->m_pCtx != NULL) {
            cabi::udt_traceinfo t;
            if (cabi::udt_cc_perf(static_cast<cabi::udt_cc_ctx*>(c->m_pCtx), &t) == 0)
                udt_dropin::copy_perf(t, &c->m_PerfInfo);
        }
        return &c->m_PerfInfo;
    }
};

CCC::CCC()
    : m_iSYNInterval(kSynUs),
      m_dPktSndPeriod(1.0),
      m_dCWndSize(16.0),
      m_iBandwidth(0),
      m_dMaxCWndSize(0.0),
      m_iMSS(0),
      m_iSndCurrSeqNo(0),
      m_iRcvRate(0),
      m_iRTT(0),
      m_pcParam(NULL),
      m_iPSize(0),
      m_pCtx(NULL),
      m_iACKPeriod(-1),
      m_iACKInterval(-1),
      m_iRTO(-1) {
    memset(&m_PerfInfo, 0, sizeof m_PerfInfo);
}

CCC::~CCC() { delete[] m_pcParam; }

void CCC::setACKTimer(int msINT) {
    m_iACKPeriod = msINT < 0 ? 0 : msINT;
    if (m_pCtx != NULL) udt_dropin_cc_bridge::apply_pending(this);
}

void CCC::setACKInterval(int pktINT) {
    m_iACKInterval = pktINT < 0 ? 0 : pktINT;
    if (m_pCtx != NULL) udt_dropin_cc_bridge::apply_pending(this);
}

void CCC::setRTO(int usRTO) {
    m_iRTO = usRTO < 0 ? 0 : usRTO;
    if (m_pCtx != NULL) udt_dropin_cc_bridge::apply_pending(this);
}

void CCC::sendCustomMsg(CPacket& pkt) const { udt_dropin_cc_bridge::send_custom(this, pkt); }

const CPerfMon* CCC::getPerfInfo() { return udt_dropin_cc_bridge::perf(this); }

void CCC::setUserParam(const char* param, int size) {
    delete[] m_pcParam;
    m_pcParam = NULL;
    m_iPSize = 0;
    if (param != NULL && size > 0) {
        m_pcParam = new char[size];
        memcpy(m_pcParam, param, static_cast<size_t>(size));
        m_iPSize = size;
    }
}

namespace udt_dropin {

int set_cc(UDTSOCKET u, const void* optval, int optlen) {
    (void)optlen;
    if (optval == NULL) {
        set_local_error(CUDTException::EINVPARAM, "UDT_CC needs a CCCVirtualFactory*");
        return UDT::ERROR;
    }
    CCCVirtualFactory* theirs = static_cast<CCCVirtualFactory*>(const_cast<void*>(optval));
    FactoryRef* ref = new FactoryRef;
    try {
        ref->factory = theirs->clone();
    } catch (...) {
        delete ref;
        set_local_error(CUDTException::EINVPARAM, "the CCC factory's clone() failed");
        return UDT::ERROR;
    }
    ref->owner = u;
    ref->last = NULL;
    static const cabi::udt_cc_ops ops = {
        udt_dropin_cc_bridge::create,      udt_dropin_cc_bridge::destroy,
        udt_dropin_cc_bridge::init,        udt_dropin_cc_bridge::close,
        udt_dropin_cc_bridge::on_ack,      udt_dropin_cc_bridge::on_loss,
        udt_dropin_cc_bridge::on_timeout,  udt_dropin_cc_bridge::on_pkt_sent,
        udt_dropin_cc_bridge::on_pkt_received, udt_dropin_cc_bridge::process_custom_msg,
        udt_dropin_cc_bridge::release,
    };
    {
        std::lock_guard<std::mutex> g(registry_lock());
        registry()[u] = ref;
    }
    // On failure the library releases `ref` (which also leaves the registry).
    return cabi::udt_setcc(u, &ops, ref, "ccc");
}

int get_cc(UDTSOCKET u, void* optval, int* optlen) {
    // UDT4 does not read *optlen here (its own sample passes an uninitialised int): only
    // the pointers are checked.
    if (optval == NULL || optlen == NULL) {
        set_local_error(CUDTException::EINVPARAM, "UDT_CC reads into a CCC*");
        return UDT::ERROR;
    }
    if (cabi::udt_getsockstate(u) == NONEXIST) {
        set_local_error(CUDTException::EINVSOCK, "no such socket");
        return UDT::ERROR;
    }
    // UDT4 hands out the connection's CCC instance; sockets using a built-in algorithm (or
    // one inherited from a listener) have none to give, which reads as NULL.
    CCC* c = NULL;
    {
        std::lock_guard<std::mutex> g(registry_lock());
        std::map<UDTSOCKET, FactoryRef*>::iterator it = registry().find(u);
        if (it != registry().end()) c = it->second->last;
    }
    memcpy(optval, &c, sizeof c);
    *optlen = sizeof c;
    return 0;
}

void copy_perf(const cabi::udt_traceinfo& t, CPerfMon* p) {
    p->msTimeStamp = t.msTimeStamp;
    p->pktSentTotal = t.pktSentTotal;
    p->pktRecvTotal = t.pktRecvTotal;
    p->pktSndLossTotal = t.pktSndLossTotal;
    p->pktRcvLossTotal = t.pktRcvLossTotal;
    p->pktRetransTotal = t.pktRetransTotal;
    p->pktSentACKTotal = t.pktSentACKTotal;
    p->pktRecvACKTotal = t.pktRecvACKTotal;
    p->pktSentNAKTotal = t.pktSentNAKTotal;
    p->pktRecvNAKTotal = t.pktRecvNAKTotal;
    p->usSndDurationTotal = t.usSndDurationTotal;
    p->pktSent = t.pktSent;
    p->pktRecv = t.pktRecv;
    p->pktSndLoss = t.pktSndLoss;
    p->pktRcvLoss = t.pktRcvLoss;
    p->pktRetrans = t.pktRetrans;
    p->pktSentACK = t.pktSentACK;
    p->pktRecvACK = t.pktRecvACK;
    p->pktSentNAK = t.pktSentNAK;
    p->pktRecvNAK = t.pktRecvNAK;
    p->mbpsSendRate = t.mbpsSendRate;
    p->mbpsRecvRate = t.mbpsRecvRate;
    p->usSndDuration = t.usSndDuration;
    p->usPktSndPeriod = t.usPktSndPeriod;
    p->pktFlowWindow = t.pktFlowWindow;
    p->pktCongestionWindow = t.pktCongestionWindow;
    p->pktFlightSize = t.pktFlightSize;
    p->msRTT = t.msRTT;
    p->mbpsBandwidth = t.mbpsBandwidth;
    p->byteAvailSndBuf = t.byteAvailSndBuf;
    p->byteAvailRcvBuf = t.byteAvailRcvBuf;
}

}  // namespace udt_dropin
