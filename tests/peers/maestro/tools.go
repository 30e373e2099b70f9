//go:build tools

// Package tools records the one program this module builds: maestro's single binary
// (subcommands server, agent, migration, consumer, resourcebundle, mcp).
package tools

import _ "github.com/openshift-online/maestro/cmd/maestro"
