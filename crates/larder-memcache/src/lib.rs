//! larder-memcache (work in progress)
