//! larder-cache-ffi (work in progress)
