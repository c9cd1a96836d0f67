package controller

import "errors"

var (
	// ErrNotController is returned on a broker that is not the active
	// controller (Kafka's NOT_CONTROLLER): the client asks the one
	// Metadata names.
	ErrNotController = errors.New("controller: not the active controller")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("controller: closed")
	// ErrUnknownBroker is returned for a broker id not of the cluster.
	ErrUnknownBroker = errors.New("controller: not a broker of the cluster")
)
