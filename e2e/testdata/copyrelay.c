/*
 * copyrelay: the barerelay of supervisor/internal/barerelay without the Go
 * runtime. It starts the command its arguments name and copies its own
 * standard input to the command's and the command's standard output to its
 * own, one thread a direction, each blocking in read(2) and then write(2):
 * the fewest system calls and wake-ups a process between a host and a
 * worker can make. The supervisor benchmarks build it with cc and report
 * what the worker behind it costs (c-relay-x-worker, c-relay-x-rg): the
 * floor of any relay on the machine, where bare-relay is the floor of one
 * written in Go.
 *
 *	copyrelay fsmcp-worker --root DIR ...
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* copy copies from to to until end of input or an error. */
static void copy(int from, int to) {
	static __thread char buf[1 << 16];
	for (;;) {
		ssize_t n = read(from, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(to, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return;
			off += w;
		}
	}
}

static int command_in;

/* up copies standard input to the command's, then closes it so that end of
   input reaches the command. */
static void *up(void *arg) {
	(void)arg;
	copy(0, command_in);
	close(command_in);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: copyrelay COMMAND [ARG...]\n");
		return 64;
	}
	int in[2], out[2];
	if (pipe(in) != 0 || pipe(out) != 0) {
		perror("copyrelay: pipe");
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("copyrelay: fork");
		return 1;
	}
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execvp(argv[1], argv + 1);
		perror("copyrelay: exec");
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	command_in = in[1];
	pthread_t t;
	if (pthread_create(&t, NULL, up, NULL) != 0) {
		fprintf(stderr, "copyrelay: cannot start a thread\n");
		return 1;
	}
	copy(out[0], 1);
	int status;
	if (waitpid(pid, &status, 0) < 0) {
		perror("copyrelay: wait");
		return 1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
