/*
 * The subcommands of mxa, in the order `mxa --help` lists them.
 *
 * To add one: write tools/mxa/<name>.c defining `int cmd_<name>(int argc,
 * char **argv)` (argv[0] is the command name; return 0, 1 on failure, 2 on a
 * usage mistake; see cli.h), and add one X(...) line below. The build reads
 * this list to find <name>.c, so that line is the whole registration.
 */
#ifndef MXA_TOOLS_COMMANDS_H
#define MXA_TOOLS_COMMANDS_H

#define MXA_COMMANDS(X)                                                                            \
    X(probe, "list backends and devices: capabilities, chosen kernel variant and why")            \
    X(demo, "run fp32, ocp-direct and mxattention on seeded data and compare them")               \
    X(attention, "run attention on .npy inputs (any recipe or ablation), optionally with --stats") \
    X(quantize, "quantize a .npy tensor to MXFP4 along its last axis; write codes, scales, dequant") \
    X(bench, "time a recipe against fp32 and OpenBLAS materialised attention; TFLOP/s, ratios") \
    X(analyze, "paper analyses on .npy tensors: uos (J(q), MSE vs q), rowsum (Fig. 7), ablation (Tables 2-3)") \
    X(conform, "the cross-backend conformance suite: every case on every device and kernel variant vs the reference")

#define MXA_DECLARE_COMMAND(name, help) int cmd_##name(int argc, char **argv);
MXA_COMMANDS(MXA_DECLARE_COMMAND)
#undef MXA_DECLARE_COMMAND

#endif
