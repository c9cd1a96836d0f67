package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestConfigFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "none", args: []string{"--upstream", "a:1"}},
		{name: "separate value", args: []string{"--upstream", "a:1", "--config", "p.properties"}, want: "p.properties"},
		{name: "inline value", args: []string{"-config=p.properties"}, want: "p.properties"},
		{name: "after the flags end", args: []string{"--", "--config", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, configFlag(tt.args))
		})
	}
}
