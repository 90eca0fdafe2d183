# fuse_conv_expected.py - the expected outputs of tests/unit/test_fuse_conv.c's
# kernel cases, computed by numpy in float64 from the same float32 inputs
# (run with /usr/bin/python3; paste the lines into conv_cases / gemm_cases).
import numpy as np
x = np.array([np.float32(((i*7)%11-5)/4) for i in range(18)], np.float32).reshape(1,2,3,3).astype(np.float64)
w = np.array([np.float32(((i*5)%9-4)/5) for i in range(16)], np.float32).reshape(2,2,2,2).astype(np.float64)
b = np.array([0.25,-0.5])
z = np.array([np.float32(((i*3)%7-3)/4) for i in range(8)], np.float32).reshape(1,2,2,2).astype(np.float64)
y = np.zeros((1,2,2,2))
for m in range(2):
  for i in range(2):
    for j in range(2):
      y[0,m,i,j] = (x[0,:,i:i+2,j:j+2]*w[m]).sum() + b[m]
def fmt(a): return "{" + ", ".join("%.9gf" % v for v in a.ravel()) + "}"
sig = lambda v: 1/(1+np.exp(-v))
print("conv plain", fmt(y))
print("leaky z", fmt(np.where(y+z<0, 0.1*(y+z), y+z)))
print("clip z", fmt(np.clip(y+z,-0.5,0.5)))
print("hsig", fmt(np.clip(0.2*y+0.5,0,1)))
print("sigmoid", fmt(sig(y)))
print("tanh z", fmt(np.tanh(y+z)))
print("relu", fmt(np.maximum(y,0)))
A = np.array([np.float32(((i*7)%11-5)/4) for i in range(6)], np.float32).reshape(2,3).astype(np.float64)
B = np.array([np.float32(((i*5)%9-4)/5) for i in range(12)], np.float32).reshape(3,4).astype(np.float64)
C = np.array([0.5,-1,0.25,2])
g = A@B + C
print("gemm", fmt(g))
print("gemm leaky", fmt(np.where(g<0,0.2*g,g)))
print("gemm hsig", fmt(np.clip(0.3*g+0.4,0,1)))
print("gemm sigmoid", fmt(sig(g)))
