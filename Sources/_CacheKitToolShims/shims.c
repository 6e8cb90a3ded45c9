// The shims are header-only (static inline); SwiftPM needs one source file per C target.
#include "_CacheKitToolShims.h"
