"""MXNet's AMP entry points. ember does not implement automatic mixed precision yet: each function
raises `AMPNotSupportedError` naming itself, so code that only imports the module (as MXNet's own
training helpers do) works, and code that uses AMP fails clearly instead of running in float32
while believing it runs in float16."""
from ...base import EmberError

__all__ = ["init", "init_trainer", "scale_loss", "unscale", "convert_model", "convert_symbol",
           "convert_hybrid_block", "convert_bucketing_module", "list_lp16_ops", "list_fp32_ops",
           "list_lp16_fp32_ops", "list_conditional_fp32_ops", "list_widest_type_cast",
           "list_loss_output_functions", "list_lp16_use_fp32_params", "AMPNotSupportedError"]


class AMPNotSupportedError(EmberError, NotImplementedError):
    """An AMP function was called: ember has no automatic mixed precision."""


def _refuse(name: str):
    def refuse(*args, **kwargs):
        raise AMPNotSupportedError(f"mx.contrib.amp.{name}: ember does not implement automatic mixed precision; "
                                   "cast the model explicitly (block.cast('float16'), multi_precision=True "
                                   "optimizers) instead")
    refuse.__name__ = name
    refuse.__doc__ = f"MXNet's amp.{name}; raises AMPNotSupportedError in ember."
    return refuse


for _name in __all__[:-1]:
    globals()[_name] = _refuse(_name)
del _name
