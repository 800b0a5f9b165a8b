//! larder-resp (work in progress)
