/*
 * status - err_code -> HTTP status, in one switch (STYLE §5).
 */
#include "http/http.h"

unsigned http_status_for(err_code code)
{
    switch (code) {   /* no default on purpose: -Wswitch names a new code that is missing */
    case ERR_OK:
        return 200;
    case ERR_INVALID:
        return 400;
    case ERR_UNAUTHORIZED:
        return 401;
    case ERR_FORBIDDEN:
        return 403;
    case ERR_NOT_FOUND:
        return 404;
    case ERR_CONFLICT:
        return 409;
    case ERR_TOO_LARGE:
        return 413;
    case ERR_BUSY:
        return 429;
    case ERR_UNSUPPORTED:
        return 422;
    case ERR_IO:
    case ERR_INTERNAL:
    case ERR_OUTDATED:   /* a stored symcache awaits its rebuild: the server's problem */
        return 500;
    case ERR_STORE:
        return 503;
    }
    return 500;   /* unreachable while the switch is complete */
}
