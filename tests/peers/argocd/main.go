// Command argocd-peer is the Argo CD test peer: the Argo CD v3.2.11 components the tests run, in
// one binary that picks its component by the name it was started as (a symlink per component, as
// Argo CD's own image does) or by $ARGOCD_BINARY_NAME, which Argo CD itself sets when it starts a
// copy of its own executable (the git credential helper). The API server, the CLI, Dex, the
// notifications and commit servers are left out: nothing here runs them, and leaving them out
// keeps them out of the build.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	appsetcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-applicationset-controller/commands"
	cmpserver "github.com/argoproj/argo-cd/v3/cmd/argocd-cmp-server/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	argolog "github.com/argoproj/argo-cd/v3/util/log"
)

// components maps each name this binary answers to onto its command. A helper that Argo CD runs
// as a child process (the CMP server and git's credential helper) prints only its own errors.
var components = map[string]struct {
	command func() *cobra.Command
	helper  bool
}{
	"argocd-application-controller":    {appcontroller.NewCommand, false},
	"argocd-applicationset-controller": {appsetcontroller.NewCommand, false},
	"argocd-repo-server":               {reposerver.NewCommand, false},
	"argocd-cmp-server":                {cmpserver.NewCommand, true},
	"argocd-git-ask-pass":              {gitaskpass.NewCommand, true},
}

func main() {
	// klog (client-go's logger) writes through Argo CD's logrus setup, with its level and format.
	klog.SetLogger(argolog.NewLogrusLogger(argolog.NewWithCurrentConfig()))

	name := filepath.Base(os.Args[0])
	if env := os.Getenv("ARGOCD_BINARY_NAME"); env != "" {
		name = env
	}
	component, ok := components[name]
	if !ok {
		names := make([]string, 0, len(components))
		for n := range components {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "argocd-peer: started as %q; start it through a symlink named one of %v\n", name, names)
		os.Exit(2)
	}
	cmd := component.command()
	if component.helper {
		cmd.SilenceErrors = true
		cmd.SilenceUsage = true
	}
	if err := cmd.Execute(); err != nil {
		if component.helper {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(1)
	}
}
