/* cli.h - what the subcommands of the gwr tool share. */
#ifndef GWR_CLI_H
#define GWR_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gwr/gwr.h"
#include "util/util.h" /* gwr_json_str, gwr_utf8_len */

/* Exit codes: 0 success, 1 failure, 2 bad usage. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

typedef struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
    void (*help)(FILE *out);
} cli_command;

extern const cli_command cli_demo;
extern const cli_command cli_inspect;
extern const cli_command cli_convert;
extern const cli_command cli_dot;
extern const cli_command cli_rewrite;
extern const cli_command cli_optimize;
extern const cli_command cli_analyze;
extern const cli_command cli_test_onnx;
extern const cli_command cli_run;
extern const cli_command cli_verify;
extern const cli_command cli_rules;
extern const cli_command cli_quantize;
extern const cli_command cli_precision;
extern const cli_command cli_generate;
extern const cli_command cli_view;
extern const cli_command cli_diff;
extern const cli_command cli_bisect;
extern const cli_command cli_explain;

/* Prints the layer table of net: one line per live layer with its class,
 * op, inputs and outputs (with types). */
void cli_print_layers(gwr_network *net, FILE *out);

/* Prints "gwr: <what>: <message>" on stderr as one line (newlines in msg
 * become spaces). When msg already starts with `what` (the library's
 * messages start with the file name), prints "gwr: <message>". */
void cli_error(const char *what, const char *msg);
/* Parses the rules file path (`--rules FILE`) into *out: CLI_OK, or
 * CLI_FAIL after one line "gwr: FILE:LINE:COL: message". */
int cli_load_rules(const char *path, gwr_rules **out);

/* Bad usage of command `cmd`: prints "gwr: <cmd>: <message> (try 'gwr <cmd>
 * --help')" as one line and returns CLI_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Does argv hold -h or --help? */
int cli_wants_help(int argc, char **argv);

/* Loads an ONNX model; on failure prints one line naming path and the
 * problem and returns NULL. opt may be NULL. */
gwr_network *cli_load(const char *path, const gwr_onnx_load_options *opt);


/* Frees a network the command is done with when the process is about to
 * exit: only in sanitizer builds (GWR_SANITIZE), where LeakSanitizer must
 * see everything freed. Otherwise exit(2) returns the memory at once,
 * where freeing a big network object by object costs as much as a tenth
 * of a load (the -disable-free of compilers). */
void cli_free_at_exit(gwr_network *net);

/* Draws net to file: .dot writes the DOT text, .svg and .png go through
 * Graphviz's `dot` (an error when it is not installed). Atomic (temporary
 * file renamed); on failure prints one line naming the file and returns -1. */
int cli_draw(gwr_network *net, const char *file);

/* Parses s, all of it, as a decimal integer in [0, INT64_MAX] into *out:
 * 0, or -1 with *why saying what is wrong ("negative", "not an integer",
 * "past int64 (...)"): a value past int64 is refused, never clamped. */
int cli_parse_int(const char *s, int64_t *out, const char **why);

/* ---- --shape, one meaning in every command (shapes.c) ---- */

/* The --shape arguments of a command, and what they mean for one model:
 * INPUT=D0,D1,... (or INPUT=scalar) the whole shape of an input, SYM=N a
 * symbolic dim. */
typedef struct cli_shapes {
    const char **args; /* as given, "NAME=..." */
    int nargs;
    /* After cli_shapes_resolve: */
    gwr_input_shape *inputs; /* whole shapes, by input name (names point into the network) */
    int64_t (*dims)[GWR_MAX_RANK];
    const char **input_arg;  /* the argument of each */
    int ninputs;
    gwr_dim_binding *bind;   /* symbolic dims: given, and those the whole shapes fix */
    const char **bind_arg;
    int nbind;
} cli_shapes;

/* "D0,D1,..." (integers >= 0) or "scalar" into dims (*rank); -1 with
 * *why. */
int cli_parse_dims(const char *s, int64_t *dims, int *rank, const char **why);
/* Takes one --shape argument (kept, not copied): the form and the numbers
 * checked, a name given twice refused. A CLI_* code (usage printed). */
int cli_shapes_add(cli_shapes *sh, const char *cmd, const char *arg);
/* Decides by the model what each argument is: an input's whole shape
 * (rank and known dims checked; its symbolic dims bound to the given
 * extents) or a symbolic dim (one extent). A name that is both or
 * neither, or two extents for one symbol, is bad usage (printed). `also`
 * (may be NULL) is a name taken as a symbol even where the model has none
 * (analyze's "seq" of GPTAttention plugins). */
int cli_shapes_resolve(cli_shapes *sh, const char *cmd, gwr_network *net, const char *also);
/* The whole shape given to input `name`, or NULL. */
const gwr_input_shape *cli_shapes_input(const cli_shapes *sh, const char *name);
/* Every input that gets random data (not in given[], no default, no whole
 * shape) must have a known rank and no unknown unnamed dim: else bad usage
 * naming the input and the dim ("input 'x' dim 2 is unknown (unnamed):
 * give --shape x=1,3,D2"). */
int cli_shapes_need_known(const cli_shapes *sh, const char *cmd, gwr_network *net, const char *const *given,
                          int ngiven);
/* Writes the whole shapes' unknown dims into the network's inputs (their
 * symbols stay, for the bindings) and infers the layers' types again
 * (never losing a rank or a dtype the model had). */
int cli_shapes_apply(const cli_shapes *sh, const char *cmd, const char *path, gwr_network *net);
void cli_shapes_free(cli_shapes *sh);

/* --level basic|extended|all and --target onnx|ort|gwr (cmd_optimize.c):
 * 0, or -1 for another word. */
int cli_parse_level(const char *v, gwr_pass_level *out);
int cli_parse_target(const char *v, unsigned *out);
/* --input-defaults auto|keep|fold: 0, or -1 for another word. --opset N:
 * 0, or -1 with why (not a number, below 1). */
int cli_parse_input_defaults(const char *v, gwr_input_defaults *out);
int cli_parse_opset(const char *v, int64_t *out, const char **why);

/* ---- the inputs of gwr run, verify and bisect (cmd_run.c) ---- */

typedef struct cli_named {
    const char *arg;  /* "NAME=..." as given */
    size_t namelen;
    const char *rest; /* after '=' */
    int used;
} cli_named;

/* --input NAME=FILE.pb ..., --shape, --random SEED as given. */
typedef struct cli_input_spec {
    cli_named *files;
    int nfiles;
    cli_shapes shapes;
    uint64_t seed;
} cli_input_spec;

typedef struct cli_inputs {
    gwr_inputs in;                /* the library's: names and values */
    gwr_value **files;            /* the values read from --input files (NULL: names no input) */
    char **file_names;
    int nfiles;
} cli_inputs;

/* Takes argv[*i] when it is --shape, --input or --random/--seed (with its
 * value, *i advanced): 1, *rc a CLI_* code (usage printed); else 0. */
int cli_input_option(const char *cmd, int argc, char **argv, int *i, cli_input_spec *spec, int *rc);
/* Values for every input of net without a default (and those given):
 * from --input files, else random of the --shape given or the declared
 * dims (gwr_exec_make_inputs). Resolves spec->shapes on net. A CLI_* code
 * (one line printed). */
int cli_make_inputs(const char *cmd, gwr_network *net, cli_input_spec *spec, cli_inputs *out);
void cli_inputs_free(cli_inputs *in);
/* mkdir -p: 0, or -1 with errno. */
int cli_mkdir_p(const char *dir);

/* ---- gwr run --profile (profile.c) ---- */

/* Turns s's profile on and adds the phases the command timed: "load"
 * (load_start..load_end) and, for an optimized session, "optimize" (from
 * new_start, when gwr_session_new was called, to the start of planning).
 * Times are gwr_clock_ns(). A CLI_* code (printed). */
int cli_profile_start(gwr_session *s, const char *model, int64_t load_start, int64_t load_end, int64_t new_start);
/* Writes the profile to file as a Chrome trace (atomically) and prints the
 * top `top` op types and layers by time on stdout. A CLI_* code. */
int cli_profile_finish(gwr_session *s, const char *file, int top);

/* "<path>.tmp.<pid>" in a malloc'd string, for writing a file atomically;
 * NULL when out of memory. */
char *cli_temp_name(const char *path);
/* data.c: an ONNX test-data file (TensorProto, SequenceProto of tensors,
 * OptionalProto) read as the kind of value decl declares (a tensor when
 * decl is NULL; when net is given and the file names another tensor of
 * it, that one's kind); bfloat16 data stored as uint16 is read as bfloat16 when declared
 * so. *name (may be NULL) gets the file's tensor name (malloc'd) or NULL.
 * NULL with gwr_last_errmsg on error; *read_failed 1 when the file could
 * not be read as such (malformed, a map, ...). */
gwr_value *cli_read_value(const char *path, gwr_network *net, gwr_tensor *decl, char **name, int *read_failed);


#endif
