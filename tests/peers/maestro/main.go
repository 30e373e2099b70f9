// Command maestro is the Maestro test peer: the server of github.com/openshift-online/maestro at
// the pseudo-version go.mod pins, with its two subcommands `migration` and `server`. Maestro's own
// main also registers `agent`, whose open-cluster-management.io/ocm dependency the Go module proxy
// refuses here; leaving it out is what makes the server buildable (tools/fleet-sim plays the agents).
package main

import (
	"flag"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/openshift-online/maestro/cmd/maestro/migrate"
	"github.com/openshift-online/maestro/cmd/maestro/servecmd"
	"github.com/openshift-online/maestro/pkg/logger"
)

func main() {
	defer logger.SyncLogger()

	// A dependency registers glog's flags on the default flag set; klog would register the same
	// names again and panic ("flag redefined: alsologtostderr"). Start klog on a fresh set then.
	if flag.CommandLine.Lookup("alsologtostderr") != nil {
		flag.CommandLine = flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	}
	klog.InitFlags(nil)

	root := &cobra.Command{
		Use:   "maestro",
		Short: "Maestro's server (test peer build: migration and server only)",
	}
	root.PersistentFlags().AddGoFlagSet(flag.CommandLine)
	root.AddCommand(migrate.NewMigrationCommand(), servecmd.NewServerCommand())
	if err := root.Execute(); err != nil {
		logger.GetLogger().Errorf("maestro: %v", err)
		os.Exit(1)
	}
}
