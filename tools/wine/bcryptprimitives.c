/* ProcessPrng for Wine 8.0, which lacks bcryptprimitives.dll: Rust's std
 * (>= 1.78) imports it on Windows for HashMap seeds and random numbers.
 * Built by make/windows.mk into the Wine prefix only; Windows itself
 * ships the real DLL. */
#include <windows.h>

#define RtlGenRandom SystemFunction036
BOOLEAN NTAPI RtlGenRandom(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!RtlGenRandom(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
