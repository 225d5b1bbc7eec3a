//! The `bale` command line, run as a user runs it: the tree store's
//! commands, the object store's (`bale obj`), disk-objectstore imports,
//! bitables and remotes, with their output, `--json` and exit codes.

mod support;

mod bitable;
mod dos_import;
mod objects;
mod remote;
mod tree;
