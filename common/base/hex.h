/*
 * hex - bytes as hexadecimal text, written by hand (no printf: these run once per frame or
 * per report).
 */
#ifndef STACKSIFT_BASE_HEX_H
#define STACKSIFT_BASE_HEX_H

#include <stdbool.h>
#include <stdint.h>

/* hex_uuid_format - the 16 bytes of a UUID as "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" into out
 * (37 bytes, NUL-terminated): upper-case digits when `upper` (Apple's UUIDs), lower-case
 * otherwise (RFC 9562's text form). */
void hex_uuid_format(char out[37], const uint8_t u[16], bool upper);

#endif
