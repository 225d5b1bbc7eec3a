//! Remotes on a real S3 server: the Bucket contract and the protocol (push,
//! pull, gc). `make test-remote-s3` runs this binary against moto and
//! s3s-fs (tests/s3/with-server.sh); a plain `cargo test` leaves it out.

#[macro_use]
#[path = "../support/mod.rs"]
mod support;

mod bucket;
mod protocol;
