/* keyiter — see keyiter.h. */
#include "zarisd/commands/keyiter.h"

#include "zarisd/commands/table.h"

void keyiter_init(struct keyiter *it, const struct command *cmd, const struct resp_arg *argv, int argc)
{
	it->fits = true;
	it->pos = 1;
	it->last = 0;
	it->step = cmd->key_step > 0 ? cmd->key_step : 1;
	if (cmd->first_key > 0) {
		/* a negative last counts from the end; past the end is clamped */
		int last = cmd->last_key < 0 ? argc + cmd->last_key : cmd->last_key;
		if (last >= argc)
			last = argc - 1;
		it->pos = cmd->first_key;
		it->last = last;
		if (it->pos > last)
			it->fits = false;
	}
	it->kfirst = 1;
	it->klast = 0;
	it->kstep = cmd->keynum_step > 0 ? cmd->keynum_step : 1;
	if (cmd->keynum_index > 0 && !command_keynum_range(cmd, argv, argc, &it->kfirst, &it->klast)) {
		it->kfirst = 1;
		it->klast = 0;
		it->fits = false;
	}
}

void keyiter_init_locked_keys(struct keyiter *it, const struct command *cmd, const struct resp_arg *argv,
			      int argc)
{
	if (keyiter_locks(cmd)) {
		keyiter_init(it, cmd, argv, argc);
		return;
	}
	*it = (struct keyiter){
		.pos = 1, .last = 0, .step = 1, .kfirst = 1, .klast = 0, .kstep = 1, .fits = true
	};
}

static int range_count(int first, int last, int step)
{
	return last >= first ? (last - first) / step + 1 : 0;
}

int keyiter_count(const struct keyiter *it)
{
	return range_count(it->pos, it->last, it->step) + range_count(it->kfirst, it->klast, it->kstep);
}
