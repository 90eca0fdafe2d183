/* hook.h - what rules_check.c takes from hook.c: a rule set's tables as
 * the items of check.h. */
#ifndef GWR_RULES_HOOK_H
#define GWR_RULES_HOOK_H

#include "rules/check.h"
#include "rules/rules_internal.h"

/* The items of rules [first, last) of a set: one per compiled table. */
typedef struct rl_item_set {
    gwr_rules_item *items;
    gwr_rules_slot_hint *hints;
    gwr_rules_attr_draw *attrs; /* RL_MAX_BINDS per item */
    int *rule_of;   /* the rule of each item */
    gwr_args **args; /* per rule, or NULL */
    int n, first, last;
} rl_item_set;

gwr_status rl_items_make(const gwr_rules *set, int first, int last, rl_item_set *s);
void rl_items_free(rl_item_set *s);

#endif
