//! The reports of the object store's operations, written once: the list
//! in [`object_reports!`](crate::object_reports) defines the core's report
//! structs and their `fields()`, and the bindings build their report
//! classes from the same list, so that a count is added in one place.

/// Calls the macro `$m` with every report of the object store: its doc,
/// name and extra derives, its counts (`u64` fields, each with its doc),
/// then its other fields. The core defines its report structs from it; a
/// binding passes a macro of its own to make its report classes, so that
/// a count added here reaches every host. The docs are `#[doc]` attributes
/// with plain strings: a `///` comment passed on through a macro becomes a
/// raw string, which napi-derive copies into TypeScript as `r"…`.
#[macro_export]
macro_rules! object_reports {
    ($m:ident) => {
        $m! {
            #[doc = " Counts and sizes of a whole store, from one index snapshot (every"]
            #[doc = " entry is read; `overview` gives the packs and the record count"]
            #[doc = " without that). Deduplication and compression: `logical_bytes`"]
            #[doc = " is what the objects hold, `unique_bytes` the content kept once,"]
            #[doc = " `stored_bytes` what the records take on disk."]
            ObjectStats [Copy] {
                #[doc = " Stored objects, and the sum of their lengths: what reading"]
                #[doc = " every object gives back, each counted whole however much it"]
                #[doc = " shares with others."]
                objects,
                logical_bytes,
                #[doc = " Records the index names (objects stored whole, chunks,"]
                #[doc = " lists), and the bytes they take in their files: headers and"]
                #[doc = " chunk lists included, payloads as stored (compressed or not)."]
                records,
                stored_bytes,
                chunked_objects,
                chunks,
                #[doc = " Records still in staging files (not yet packed)."]
                staged_records,
                compressed_records,
                #[doc = " Content bytes stored once each: the lengths of the blob and"]
                #[doc = " chunk records before compression, each id once however many"]
                #[doc = " objects share it (chunks of deleted objects count until a"]
                #[doc = " repack drops them). `logical_bytes / unique_bytes` is the"]
                #[doc = " deduplication ratio and `logical_bytes - unique_bytes` what it"]
                #[doc = " saved; `unique_bytes - stored_bytes` what compression saved,"]
                #[doc = " less the headers and lists."]
                unique_bytes,
                #[doc = " Numbered packs and their committed bytes."]
                packs,
                pack_bytes,
            } {}

            #[doc = " What a pack or repack run did."]
            PackReport [] {
                #[doc = " Staging files (pack) or packs (repack) emptied and removed."]
                files_removed,
                records_moved,
                bytes_moved,
                #[doc = " Staging files left alone because a writer still holds them."]
                files_in_use,
                #[doc = " Staging files packed but kept, because the index may have fallen"]
                #[doc = " back (see `index_warning`): their other records may be objects"]
                #[doc = " it lost, which `rebuild_index` recovers from them."]
                files_kept,
                #[doc = " Index entries dropped because nothing refers to them any more."]
                entries_dropped,
                #[doc = " Bytes the store's files shrank by."]
                bytes_freed,
            } {
                #[doc = " Problems found and left in place (damaged files are never"]
                #[doc = " removed), and files no commit names, removed."]
                problems: Vec<$crate::objects::ObjectProblem>,
            }

            #[doc = " What `validate` checked, and the problems it found."]
            ValidateReport [] {
                objects_checked,
                records_checked,
                bytes_checked,
                #[doc = " Intact records in packs and staging files whose id has no"]
                #[doc = " index entry, and the objects (blobs, roots) among them: the"]
                #[doc = " garbage of batches never committed and of deleted objects"]
                #[doc = " not yet repacked, or objects an index that fell back lost"]
                #[doc = " (`rebuild_index` brings them back). Counted by a full"]
                #[doc = " validate of a directory store only."]
                unindexed_records,
                unindexed_objects,
            } {
                problems: Vec<$crate::objects::ObjectProblem>,
            }

            #[doc = " What `rebuild_index` found."]
            RebuildReport [] {
                #[doc = " Intact records read, and the objects among them."]
                records,
                objects,
                #[doc = " Records that failed their checksum or hash, and damaged"]
                #[doc = " stretches skipped."]
                bad_records,
                skipped_ranges,
            } {
                #[doc = " Files skipped, and objects left out because a chunk is missing."]
                problems: Vec<$crate::objects::ObjectProblem>,
            }

            #[doc = " What a copy between stores (or an import) moved."]
            TransferReport [] {
                #[doc = " Objects written to the destination, and their content bytes."]
                objects_copied,
                bytes_copied,
                #[doc = " Objects the destination already had."]
                objects_present,
            } {}

            #[doc = " What `add_tree` added."]
            AddTreeReport [] {
                #[doc = " Regular files added and their bytes."]
                files,
                bytes,
                #[doc = " Directories walked."]
                dirs,
            } {
                #[doc = " Links and special files left out (relative paths)."]
                skipped: Vec<String>,
            }

            #[doc = " What `clean` removed."]
            CleanReport [] {
                #[doc = " Staging files packed and removed, and leftover files removed."]
                files_removed,
                bytes_freed,
                #[doc = " Size of the index before and after its compaction (0 for a"]
                #[doc = " single-file store, whose file is compacted as a tree store)."]
                index_bytes_before,
                index_bytes_after,
            } {}
        }
    };
}

/// The core's structs from the list.
macro_rules! define_reports {
    ($(
        $(#[$doc:meta])* $name:ident [$($derive:ident)*]
        { $( $(#[$fdoc:meta])* $f:ident ),* $(,)? }
        { $( $(#[$xdoc:meta])* $x:ident : $xt:ty ),* $(,)? }
    )*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Default, PartialEq, Eq $(, $derive)*)]
            pub struct $name {
                $( $(#[$fdoc])* pub $f: u64, )*
                $( $(#[$xdoc])* pub $x: $xt, )*
            }

            impl $name {
                /// Every count by its name, in the list's order: what a host
                /// turns into its own report object.
                pub fn fields(&self) -> [(&'static str, u64); [$(stringify!($f)),*].len()] {
                    [$( (stringify!($f), self.$f) ),*]
                }
            }
        )*
    };
}

object_reports!(define_reports);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_follow_the_list() {
        let r = PackReport { files_removed: 1, bytes_freed: 6, ..PackReport::default() };
        assert_eq!(r.fields()[0], ("files_removed", 1));
        assert_eq!(r.fields()[6], ("bytes_freed", 6));
        assert_eq!(ObjectStats::default().fields().len(), 11);
        assert_eq!(CleanReport::default().fields().map(|f| f.0)[3], "index_bytes_after");
    }
}
