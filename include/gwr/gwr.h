/* gwr/gwr.h - everything public in one include. */
#ifndef GWR_GWR_H
#define GWR_GWR_H

#include "gwr/core.h"
#include "gwr/ir.h"
#include "gwr/functional.h"
#include "gwr/rewrite.h"
#include "gwr/match.h"
#include "gwr/rules.h"
#include "gwr/passes.h"
#include "gwr/optimize.h"
#include "gwr/analyze.h"
#include "gwr/onnx.h"
#include "gwr/exec.h"
#include "gwr/quantize.h"
#include "gwr/generate.h"
#include "gwr/diff.h"

#endif
