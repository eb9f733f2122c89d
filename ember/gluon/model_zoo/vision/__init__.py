"""`gluon.model_zoo.vision`: MXNet 1.9.1's image-classification networks (AlexNet, DenseNet,
Inception v3, ResNet V1/V2, SqueezeNet, VGG, MobileNet, MobileNetV2) with its block structure and
parameter names, so weights MXNet saved load here.

Build one by constructor (`resnet18_v1()`, `squeezenet1_0()`, ...) or by name with `get_model`;
`pretrained=True` loads MXNet's published weights file from `root` (see model_store).  Pretrained
models expect RGB images in [0, 1] normalized with mean (0.485, 0.456, 0.406) and std
(0.229, 0.224, 0.225), at least 224x224 (299x299 for Inception v3).
"""
from .alexnet import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .inception import *  # noqa: F401,F403
from .mobilenet import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403
# get_model's names (MXNet's, which are also the weight files' names) -> constructors
_models = {
    "resnet18_v1": resnet18_v1, "resnet34_v1": resnet34_v1, "resnet50_v1": resnet50_v1,  # noqa: F405
    "resnet101_v1": resnet101_v1, "resnet152_v1": resnet152_v1,  # noqa: F405
    "resnet18_v2": resnet18_v2, "resnet34_v2": resnet34_v2, "resnet50_v2": resnet50_v2,  # noqa: F405
    "resnet101_v2": resnet101_v2, "resnet152_v2": resnet152_v2,  # noqa: F405
    "vgg11": vgg11, "vgg13": vgg13, "vgg16": vgg16, "vgg19": vgg19,  # noqa: F405
    "vgg11_bn": vgg11_bn, "vgg13_bn": vgg13_bn, "vgg16_bn": vgg16_bn, "vgg19_bn": vgg19_bn,  # noqa: F405
    "alexnet": alexnet,  # noqa: F405
    "densenet121": densenet121, "densenet161": densenet161,  # noqa: F405
    "densenet169": densenet169, "densenet201": densenet201,  # noqa: F405
    "squeezenet1.0": squeezenet1_0, "squeezenet1.1": squeezenet1_1,  # noqa: F405
    "inceptionv3": inception_v3,  # noqa: F405
    "mobilenet1.0": mobilenet1_0, "mobilenet0.75": mobilenet0_75,  # noqa: F405
    "mobilenet0.5": mobilenet0_5, "mobilenet0.25": mobilenet0_25,  # noqa: F405
    "mobilenetv2_1.0": mobilenet_v2_1_0, "mobilenetv2_0.75": mobilenet_v2_0_75,  # noqa: F405
    "mobilenetv2_0.5": mobilenet_v2_0_5, "mobilenetv2_0.25": mobilenet_v2_0_25,  # noqa: F405
}


def get_model(name: str, **kwargs):
    """The network called `name` (case-insensitive; 'resnet50_v1', 'vgg16_bn', 'squeezenet1.1',
    'inceptionv3', 'mobilenet0.25', 'mobilenetv2_1.0', ...; ValueError listing the names for an
    unknown one).

    Keywords go to the constructor: pretrained (load the weights file from `root`), ctx (where
    to load them, default CPU), root (default $MXNET_HOME/models), classes (outputs, default
    1000), and the network class's own arguments.
    """
    name = name.lower()
    if name not in _models:
        raise ValueError("Model %s is not supported. Available options are\n\t%s"
                         % (name, "\n\t".join(sorted(_models))))
    return _models[name](**kwargs)
