/* zc_keyslot — see zc_keyslot.h: keyslot.c itself, compiled under the
 * renamed symbols. */
#include "zarisd/client/zc_keyslot.h"

#include "zarisd/core/keyslot.c"
