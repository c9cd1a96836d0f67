// Package batchfile reads files of concatenated v2 record batches (a
// segment of a partition's log, the group coordinator's offset log),
// checking every batch, and tells the torn tail a crash leaves at the end
// of a file being appended to from corruption that no crash explains.
//
// # Torn tail or corruption
//
// Scan stops at the first batch that is not whole and valid (framing,
// magic, record count, CRC-32C, and an offset not before the one
// expected: a compacted log's batches leave gaps). If a
// whole, valid batch can be found anywhere after it, the file went on past
// the bad batch, which a torn append does not do: that is corruption, and
// an error naming the position and offset. Otherwise what is left is a
// torn tail, which the caller truncates. A whole batch is recognised by a
// header that decodes, a base offset not below the one expected, and a
// checksum that matches: a false match needs a CRC-32C collision.
//
// After a power loss without per-append flushes, a file whose later pages
// reached the disk before earlier ones looks corrupt by this rule, and its
// owner refuses to open it rather than drop what follows the hole: an
// operator decides, with the position in the error.
package batchfile
