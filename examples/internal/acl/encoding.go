package acl

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// encodingVersion is the first byte of an encoded binding; a change of
// layout takes a new version, and DecodeBinding refuses the ones it does
// not know.
const encodingVersion = 1

// AppendBinary appends b's encoding to dst, for a metadata-log record
// (it implements encoding.BinaryAppender). The layout, 8 + len(strings)
// bytes for short strings:
//
//	version       1 byte, 1
//	resource type 1 byte, the kmsg code
//	pattern type  1 byte
//	operation     1 byte
//	permission    1 byte
//	name          uvarint length, then the bytes
//	principal     uvarint length, then the bytes
//	host          uvarint length, then the bytes
//
// It refuses an invalid binding (see [Binding.Validate]), so that a log
// holds only what DecodeBinding accepts.
func (b Binding) AppendBinary(dst []byte) ([]byte, error) {
	if err := b.Validate(); err != nil {
		return dst, err
	}
	dst = append(dst, encodingVersion, byte(b.ResourceType), byte(b.PatternType), byte(b.Operation), byte(b.Permission))
	for _, s := range [...]string{b.ResourceName, b.Principal, b.Host} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return dst, nil
}

// DecodeBinding returns the binding that data, the whole of it, encodes
// (see [Binding.AppendBinary]). It returns [ErrCorruptRecord] for bytes
// that no valid binding encodes to (an unknown version, a length past the
// end, a length not in its shortest form, bytes left over), also
// [ErrInvalidBinding] when the fields decode but fail validation. It
// never allocates more than len(data): lengths are checked against the
// bytes present before any copy. An accepted input is the only encoding
// of its binding.
func DecodeBinding(data []byte) (Binding, error) {
	const fixed = 5
	if len(data) < fixed {
		return Binding{}, fmt.Errorf("%w: %d bytes, fewer than the %d of the fixed fields", ErrCorruptRecord, len(data), fixed)
	}
	if data[0] != encodingVersion {
		return Binding{}, fmt.Errorf("%w: unknown version %d", ErrCorruptRecord, data[0])
	}
	b := Binding{
		ResourceType: kmsg.ACLResourceType(data[1]),
		PatternType:  kmsg.ACLResourcePatternType(data[2]),
		Operation:    kmsg.ACLOperation(data[3]),
		Permission:   kmsg.ACLPermissionType(data[4]),
	}
	rest := data[fixed:]
	for _, f := range [...]struct {
		name string
		dst  *string
	}{{"resource name", &b.ResourceName}, {"principal", &b.Principal}, {"host", &b.Host}} {
		n, size := binary.Uvarint(rest)
		if size <= 0 {
			return Binding{}, fmt.Errorf("%w: %s length cut short or overflowing", ErrCorruptRecord, f.name)
		}
		if size != uvarintLen(n) {
			return Binding{}, fmt.Errorf("%w: %s length not in its shortest form", ErrCorruptRecord, f.name)
		}
		rest = rest[size:]
		if n > uint64(len(rest)) {
			return Binding{}, fmt.Errorf("%w: %s of %d bytes, %d left", ErrCorruptRecord, f.name, n, len(rest))
		}
		*f.dst = string(rest[:n])
		rest = rest[n:]
	}
	if len(rest) > 0 {
		return Binding{}, fmt.Errorf("%w: %d bytes after the host", ErrCorruptRecord, len(rest))
	}
	if err := b.Validate(); err != nil {
		return Binding{}, fmt.Errorf("%w: %w", ErrCorruptRecord, err)
	}
	return b, nil
}

// uvarintLen is the length of v's shortest uvarint encoding.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }
