// CPacket for the drop-in: a view of a packet handed to CCC callbacks, or a custom message an
// algorithm builds for sendCustomMsg.
#include <string.h>

#include "packet.h"

const int CPacket::m_iPktHdrSize = 16;

CPacket::CPacket()
    : m_iSeqNo(m_nHeader[0]),
      m_iMsgNo(m_nHeader[1]),
      m_iTimeStamp(m_nHeader[2]),
      m_iID(m_nHeader[3]),
      m_pcData(m_pData),
      m_pData(NULL),
      m_iLength(0),
      m_bControl(false),
      m_iType(0),
      m_iExtType(0) {
    memset(m_nHeader, 0, sizeof m_nHeader);
}

CPacket::CPacket(const CPacket& other)
    : m_iSeqNo(m_nHeader[0]),
      m_iMsgNo(m_nHeader[1]),
      m_iTimeStamp(m_nHeader[2]),
      m_iID(m_nHeader[3]),
      m_pcData(m_pData),
      m_pData(NULL),
      m_iLength(0),
      m_bControl(false),
      m_iType(0),
      m_iExtType(0) {
    *this = other;
}

CPacket& CPacket::operator=(const CPacket& other) {
    if (this == &other) return *this;
    memcpy(m_nHeader, other.m_nHeader, sizeof m_nHeader);
    m_iLength = other.m_iLength;
    m_bControl = other.m_bControl;
    m_iType = other.m_iType;
    m_iExtType = other.m_iExtType;
    // A copy owns its payload, so it outlives the callback that produced the original.
    if (other.m_pData != NULL && other.m_iLength > 0) {
        m_Owned.assign(other.m_pData, other.m_pData + other.m_iLength);
        m_pData = &m_Owned[0];
    } else {
        m_Owned.clear();
        m_pData = NULL;
    }
    return *this;
}

CPacket::~CPacket() {}

void CPacket::setLength(int len) { m_iLength = len < 0 ? 0 : len; }

int CPacket::getLength() const { return m_iLength; }

void CPacket::pack(int pkttype, void* lparam, void* rparam, int size) {
    m_bControl = true;
    m_iType = pkttype;
    if (pkttype == 0x7FFF) {
        m_iExtType = lparam != NULL ? *static_cast<int32_t*>(lparam) : 0;
        if (rparam != NULL && size > 0) {
            m_Owned.assign(static_cast<char*>(rparam), static_cast<char*>(rparam) + size);
            m_pData = &m_Owned[0];
            m_iLength = size;
        } else {
            m_Owned.clear();
            m_pData = NULL;
            m_iLength = 0;
        }
    }
}

int CPacket::getFlag() const { return m_bControl ? 1 : 0; }

int CPacket::getType() const { return m_iType; }

int CPacket::getExtendedType() const { return m_iExtType; }

int32_t CPacket::getAckSeqNo() const { return m_nHeader[1]; }

int CPacket::getMsgBoundary() const { return static_cast<int>((static_cast<uint32_t>(m_nHeader[1]) >> 30) & 3); }

bool CPacket::getMsgOrderFlag() const { return ((static_cast<uint32_t>(m_nHeader[1]) >> 29) & 1) != 0; }

int32_t CPacket::getMsgSeq() const { return m_nHeader[1] & 0x1FFFFFFF; }

CPacket* CPacket::clone() const { return new CPacket(*this); }
