// Build-only module for the Maestro test peer (tests/peers/build/maestro.sh).
// It exists because `go install pkg@version` refuses modules with replace directives; we build
// maestro's cmd/maestro as a dependency of this module instead. The maestro requirement is
// added by the build script (`go get github.com/openshift-online/maestro@$MMI_MAESTRO_COMMIT`)
// in a scratch copy under $MMI_PEERS_HOME, so the pin lives in one place (tests/peers/lib.sh).
// maestro's go.mod at ab480c6 has no replace directives; if a later pin adds some, copy them here.
module mmi.invalid/tests/peers/maestro

go 1.25.12
