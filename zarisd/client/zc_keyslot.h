/* zc_keyslot — zarisd's core/keyslot (Redis Cluster's hash slot) under
 * libzaris's own names: the library compiles keyslot.c in (zc_keyslot.c),
 * renamed so that a program linking libzaris.a beside zarisd's objects has
 * no duplicate symbol. Include this, not core/keyslot.h, in the library.
 */
#ifndef ZC_KEYSLOT_H
#define ZC_KEYSLOT_H

#define zr_crc16 zc_crc16
#define zr_key_hashtag zc_key_hashtag
#define zr_key_slot zc_key_slot
#include "zarisd/core/keyslot.h"

#endif
