// Package in is internal: its exported members show in a's API only
// through a's embeddings and aliases.
package in

type State struct{ Field int }

func (s *State) Promoted() {}

type Aliased struct{ X string }

func (Aliased) M() {}
