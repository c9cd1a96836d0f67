package kafkanet

import "errors"

// ErrBadRequest is wrapped when a request cannot be read (a frame past
// socket.request.max.bytes, a header or body kmsg cannot decode) or is not
// served (an unknown API, a version the Handler does not serve): the
// connection is closed, as Kafka closes it.
var ErrBadRequest = errors.New("kafkanet: bad request")
