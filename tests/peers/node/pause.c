// The sandbox ("pause") process of every pod that bin/start-node runs: it holds the pod's
// namespaces, reaps the zombies of a shared PID namespace and exits on SIGINT/SIGTERM. Built
// static by tests/peers/build/node.sh and put alone into the image localhost/mmi-node/pause
// (no registry: the image is made here and loaded into containerd).
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void OnTerminate(int signo) { _exit(signo == SIGTERM ? 0 : 2); }

static void OnChild(int signo) {
  (void)signo;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction terminate = {.sa_handler = OnTerminate};
  struct sigaction child = {.sa_handler = OnChild, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGINT, &terminate, NULL) != 0 || sigaction(SIGTERM, &terminate, NULL) != 0 ||
      sigaction(SIGCHLD, &child, NULL) != 0) {
    return 1;
  }
  for (;;) {
    pause();
  }
}
