// Package a exercises the listing: generics, embeddings, aliases,
// interfaces, constants.
package a

import (
	"sync"

	"example.com/mod/internal/in"
)

const Typed Kind = 2

const Untyped = "s"

type Kind uint8

func (k Kind) String() string { return "" }

type Op interface {
	Run(n int, names ...string) (bool, error)
	hidden()
}

type hiddenBase struct{ Shown int }

func (hiddenBase) FromHidden() {}

type Public struct {
	Exported
	sync.Mutex
	in.State
	hiddenBase
	Name    string
	private int
}

type Exported struct{}

func (*Exported) FromExported() {}

type Alias = in.Aliased

type List[K comparable, V any] struct{}

func (l *List[K, V]) Get(K) (V, bool) { var v V; return v, false }

func New[K comparable, V any](n int) *List[K, V] { return nil }

var Err error
