/* cmd_dot.c - `gwr dot MODEL -o FILE`: a picture of a model. FILE.dot is
 * written by gwr itself; FILE.svg and FILE.png are drawn by Graphviz's
 * `dot`, fed the DOT text through a pipe. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

extern char **environ;

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr dot MODEL -o FILE\n"
            "\n"
            "Draws an ONNX model as a graph: layers as boxes (op and name), tensors as edges\n"
            "labelled with their type, inputs and outputs as ellipses. The kind of FILE comes\n"
            "from its extension:\n"
            "\n"
            "  .dot   Graphviz source, written by gwr\n"
            "  .svg   drawn by Graphviz ('dot -Tsvg'), which must be on PATH\n"
            "  .png   drawn by Graphviz ('dot -Tpng'), which must be on PATH\n"
            "\n"
            "  -o, --output FILE   the file to write (required)\n"
            "\n"
            "FILE is written to a temporary name and renamed, so a failure leaves no partial file.\n"
            "Exit status: 0 success, 1 failure, 2 bad usage.\n");
}

/* The Graphviz format for FILE's extension: "dot", "svg", "png", or NULL. */
static const char *format_of(const char *path) {
    static const char *const fmts[] = {"dot", "svg", "png"};
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base) return NULL;
    for (size_t i = 0; i < sizeof fmts / sizeof *fmts; i++)
        if (!strcmp(dot + 1, fmts[i])) return fmts[i];
    return NULL;
}

/* The full path of an executable `prog` on PATH, malloc'd, or NULL. */
static char *find_on_path(const char *prog) {
    const char *path = getenv("PATH");
    if (!path) path = "/bin:/usr/bin";
    size_t plen = strlen(prog);
    while (1) {
        const char *end = strchr(path, ':');
        size_t n = end ? (size_t)(end - path) : strlen(path);
        char *full = malloc(n + plen + 3);
        if (!full) return NULL;
        if (n == 0) snprintf(full, plen + 3, "./%s", prog); /* an empty entry is the current directory */
        else snprintf(full, n + plen + 2, "%.*s/%s", (int)n, path, prog);
        struct stat st;
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0) return full;
        free(full);
        if (!end) return NULL;
        path = end + 1;
    }
}

/* Writes the DOT text of net to `tmp` (already created, open as fd). */
static int write_dot_file(gwr_network *net, int fd, const char *file) {
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        cli_error(file, strerror(errno));
        return -1;
    }
    gwr_status st = gwr_network_write_dot(net, f);
    int werr = ferror(f);
    if (fclose(f) != 0 || werr || st != GWR_OK) {
        cli_error(file, st != GWR_OK ? gwr_network_errmsg(net) : "cannot write the DOT file");
        return -1;
    }
    return 0;
}

/* Pipes the DOT text of net into `dot -T<fmt> -o tmp`. */
static int render(gwr_network *net, const char *dot_exe, const char *fmt, const char *tmp, const char *file) {
    int fds[2];
    FILE *errf = tmpfile(); /* Graphviz's own messages, for a one-line error */
    if (!errf || pipe(fds) != 0) {
        cli_error(file, strerror(errno));
        if (errf) fclose(errf);
        return -1;
    }
    char targ[16];
    snprintf(targ, sizeof targ, "-T%s", fmt);
    char *args[] = {(char *)"dot", targ, (char *)"-o", (char *)tmp, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
    posix_spawn_file_actions_adddup2(&fa, fileno(errf), 1);
    posix_spawn_file_actions_adddup2(&fa, fileno(errf), 2);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    pid_t pid;
    int err = posix_spawn(&pid, dot_exe, &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[0]);
    if (err) {
        close(fds[1]);
        fclose(errf);
        char msg[512];
        snprintf(msg, sizeof msg, "cannot run Graphviz '%s': %s", dot_exe, strerror(err));
        cli_error("dot", msg);
        return -1;
    }
    /* If dot dies early, writing must fail with EPIPE, not kill us. */
    struct sigaction ign = {0}, old;
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &old);
    FILE *w = fdopen(fds[1], "w");
    gwr_status st = GWR_ERR_IO;
    int werr = 1;
    if (w) {
        st = gwr_network_write_dot(net, w);
        werr = ferror(w);
        if (fclose(w) != 0) werr = 1;
    } else {
        close(fds[1]);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    sigaction(SIGPIPE, &old, NULL);

    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok && st == GWR_OK && !werr) {
        fclose(errf);
        return 0;
    }
    char line[400] = "";
    if (!ok) {
        rewind(errf);
        if (!fgets(line, sizeof line, errf)) line[0] = 0;
        line[strcspn(line, "\r\n")] = 0;
    }
    fclose(errf);
    char msg[600];
    if (st != GWR_OK) snprintf(msg, sizeof msg, "%s", gwr_network_errmsg(net));
    else if (!ok && WIFSIGNALED(status))
        snprintf(msg, sizeof msg, "Graphviz 'dot -T%s' was killed by signal %d", fmt, WTERMSIG(status));
    else if (!ok)
        snprintf(msg, sizeof msg, "Graphviz 'dot -T%s' failed (exit %d)%s%s", fmt, WEXITSTATUS(status),
                 line[0] ? ": " : "", line);
    else snprintf(msg, sizeof msg, "writing the DOT text to Graphviz failed");
    cli_error(file, msg);
    return -1;
}

static int run(int argc, char **argv) {
    const char *model = NULL, *file = NULL;
    int opts = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (opts && (!strcmp(a, "-o") || !strcmp(a, "--output"))) {
            if (i + 1 >= argc) return cli_usage("dot", "%s needs a FILE", a);
            file = argv[++i];
        } else if (opts && !strncmp(a, "--output=", 9)) {
            file = a + 9;
        } else if (opts && !strcmp(a, "--")) {
            opts = 0;
        } else if (opts && a[0] == '-' && a[1]) {
            return cli_usage("dot", "unknown option '%s'", a);
        } else if (!model) {
            model = a;
        } else {
            return cli_usage("dot", "unexpected argument '%s': one MODEL only", a);
        }
    }
    if (!model) return cli_usage("dot", "missing MODEL");
    if (!file || !*file) return cli_usage("dot", "missing -o FILE");
    if (!format_of(file)) return cli_usage("dot", "%s: FILE must end in .dot, .svg or .png", file);
    /* Types for what the file leaves untyped, so that every edge has a label. */
    gwr_onnx_load_options lo = {.infer_shapes = 1};
    gwr_network *net = cli_load(model, &lo);
    if (!net) return CLI_FAIL;
    int rc = cli_draw(net, file) ? CLI_FAIL : CLI_OK;
    if (rc == CLI_OK) printf("wrote %s\n", file);
    gwr_network_free(net);
    return rc;
}

int cli_draw(gwr_network *net, const char *file) {
    const char *fmt = format_of(file);
    if (!fmt) {
        cli_error(file, "a picture must end in .dot, .svg or .png");
        return -1;
    }
    char *dot_exe = NULL;
    if (strcmp(fmt, "dot") != 0 && !(dot_exe = find_on_path("dot"))) {
        cli_error(file, "Graphviz 'dot' not found (apt-get install graphviz)");
        return -1;
    }
    int bad = 1;
    char *tmp = cli_temp_name(file);
    if (!tmp) {
        cli_error(file, "out of memory");
        goto out;
    }
    /* Create the temporary ourselves: a bad directory is reported with
     * the file's own name, before Graphviz is started. */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "cannot write: %s", strerror(errno));
        cli_error(file, msg);
        goto out;
    }
    if (!dot_exe) {
        bad = write_dot_file(net, fd, file);
    } else {
        close(fd);
        bad = render(net, dot_exe, fmt, tmp, file);
    }
    if (!bad && rename(tmp, file) != 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "cannot write: %s", strerror(errno));
        cli_error(file, msg);
        bad = 1;
    }
    if (bad) unlink(tmp);
out:
    free(tmp);
    free(dot_exe);
    return bad ? -1 : 0;
}

const cli_command cli_dot = {"dot", "draw an ONNX model with Graphviz (.dot, .svg or .png)", run, help};
